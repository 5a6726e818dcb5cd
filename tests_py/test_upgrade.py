"""
Upgrades: a database deployed from the previous release, with work in flight, is upgraded to HEAD
and everything in it finishes, each step exactly once; a reworked function keeps its settings
through deploy, revert and deploy again.

From 0.9.x: the plan was re-baselined at 1.0 (scripts/rebaseline_plan.py), so a 0.9 database is
upgraded by `pgflight migrate` (migrate.upgrade): the 0.9 plan's changes after its last tag (the
bridge, sql/upgrade/from-0.9), a check of the schema against 0.9's committed dump, and the new plan
recorded without running it. The test deploys 0.9.0 from the commit the bridge names (git), puts
work in flight, parks waits at a later point of the 0.9 plan (WAITS_POINT, before approvals carried
a payload), upgrades, and finishes everything through HEAD's API.

From the previous tag of this plan: HEAD may equal that tag (right after a release). So that the
upgrade always replaces code under live work, that test upgrades to a scratch copy of the project
where every function and view change is reworked once more after an extra tag
(plan_support.rework_everything): the real changes since the tag, then a new definition of every
function, each with a comment added to its body. That part needs no edit when maintainers rework
functions or tag releases.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from core_helpers import invariant_violations
from pgflight import db, migrate
from pgflight.db import agent as db_agent
from pgflight.models import ClaimedStep
from plan_support import (
    ROOT,
    copy_project,
    gen_sql_scripts,
    mark_bodies,
    previous_tag,
    release_project,
    rework_everything,
    sqitch,
)
from upgrade_recipes import CHILDREN
from worker_support import wait_for, worker_factory

# each test deploys or reverts the whole plan through sqitch (a psql call per change): 1-2 min
# on an idle 2-core machine, past the suite's 300 s timeout under a load of 12 (seen here)
pytestmark = pytest.mark.timeout(900)

Conn = psycopg.Connection[Any]
CLAIM_BATCH = "pgflight.claim_batch(bigint, integer, double precision, text[], jsonb)"
#: the 0.9 plan's last change before approvals carried a payload (sqitch: the change before that one)
WAITS_POINT = "tables/approvals_payload^"
#: the release the re-baselined plan upgrades from, and its tag in the old plan
OLD_RELEASE = "@v0.9.0"
TERMINAL = ("succeeded", "dead_letter", "cancelled")


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """Worker subprocesses, SIGKILLed at teardown."""
    yield from worker_factory(tmp_path)


@dataclass
class InFlight:
    """What was left half-done in the database at the previous tag."""

    worker_id: int
    queued: list[int]  # run ids of steps still queued
    held: ClaimedStep  # claimed and started: a live lease and fencing token
    parent: ClaimedStep  # parked on its three children (awaiting_children)
    gated: ClaimedStep  # parked at an approval gate (awaiting_approval)
    agent: ClaimedStep  # an agent between iterations 1 and 2, lease held
    agent_run_id: int


@dataclass
class Parked:
    """Waits parked at WAITS_POINT (after the tag, before the upgrade's last changes)."""

    sleeping: ClaimedStep  # a timer (ctx.sleep)
    awaiting_event: ClaimedStep  # an event wait (ctx.wait_event)
    gated: ClaimedStep  # an approval gate that will be decided with a payload


def park_waits(conn: Conn, worker_id: int) -> Parked:
    """Through the API of the schema at WAITS_POINT, as the recipes of upgrade_recipes park."""
    sleeping = _claim(conn, worker_id, "up_sleep")
    assert db.wait_timer(conn, sleeping.attempt_id, sleeping.fencing_token, "sleep:nap", 1).waiting
    awaiting = _claim(conn, worker_id, "up_event")
    assert db.wait_event(
        conn, awaiting.attempt_id, awaiting.fencing_token, "event:order.paid:7", "order.paid", "7"
    ).waiting
    gated = _claim(conn, worker_id, "up_approval")
    assert db.request_approval(
        conn, gated.attempt_id, gated.fencing_token, "ship", request={"to": "x"}
    ).waiting
    return Parked(sleeping, awaiting, gated)


def wake_waits(conn: Conn, parked: Parked) -> None:
    """After the upgrade: the timer elapses (the sweep), the event comes, the gate is decided."""
    wait_for(
        lambda: conn.execute(
            "select due_at <= clock_timestamp() from pgflight.waits where step_id = %s",
            [parked.sleeping.step_id],
        ).fetchone()[0],  # type: ignore[index]
        10,
        "the timer to be due",
    )
    assert db.expire_waits(conn) >= 1
    assert db.emit_event(conn, "up", "order.paid", "7", {"usd": 7}).woken == 1
    assert db.approve(
        conn, parked.gated.step_id, "approve", "ops", gate_key="ship", payload={"to": "depot"}
    ).applied


def assert_waits_finished_on_one_attempt(conn: Conn, parked: Parked) -> None:
    def result(step_id: int) -> Any:
        row = conn.execute("select result from pgflight.step_status where step_id = %s", [step_id]).fetchone()
        return row[0] if row else None

    assert result(parked.sleeping.step_id) == {"slept": True}
    assert result(parked.awaiting_event.step_id) == {"paid": {"usd": 7}}
    assert result(parked.gated.step_id) == {"decision": "approve", "payload": {"to": "depot"}}
    for c in (parked.sleeping, parked.awaiting_event, parked.gated):
        assert conn.execute(
            "select count(*) from pgflight.step_attempts where step_id = %s", [c.step_id]
        ).fetchone() == (1,), "a wait spends no attempt, across an upgrade too"


def _claim(conn: Conn, worker_id: int, recipe: str) -> ClaimedStep:
    db.submit_run(conn, "up", recipe, {"recipe": recipe})
    (claimed,) = db.claim_batch(conn, worker_id, batch_size=1, lease_s=600, recipes=[recipe], start=True)
    return claimed


def put_work_in_flight(conn: Conn) -> InFlight:
    """Through the API of the deployed version, as a worker and an operator would."""
    db.create_workspace(conn, "up")
    wid = db.register_worker(conn, "before-upgrade")
    held = _claim(conn, wid, "up_noop")
    parent = _claim(conn, wid, "up_parent")
    spawned = db.spawn_children(conn, parent.attempt_id, parent.fencing_token, CHILDREN)
    assert spawned.parked
    gated = _claim(conn, wid, "up_gated")
    asked = db.request_approval(conn, gated.attempt_id, gated.fencing_token, "release", request={"what": "x"})
    assert asked.waiting
    agent = _claim(conn, wid, "up_agent")
    begun = db_agent.begin_agent_run(
        conn, agent.attempt_id, agent.fencing_token, model="claude-haiku-4-5", task="t"
    )
    usage = {"input_tokens": 1000, "output_tokens": 100}
    db_agent.record_model_call(
        conn,
        agent.attempt_id,
        agent.fencing_token,
        begun.agent_run_id,
        1,
        [{"type": "text", "text": "first thoughts"}],
        usage,
        "claude-haiku-4-5",
        stop_reason="pause_turn",
    )
    queued = [db.submit_run(conn, "up", "up_noop", {"i": i}).run_id for i in range(3)]
    statuses = dict(
        conn.execute("select status, count(*) from pgflight.step_attempts group by status").fetchall()
    )
    assert statuses == {"queued": 6, "running": 2, "awaiting_children": 1, "awaiting_approval": 1}, statuses
    return InFlight(wid, queued, held, parent, gated, agent, begun.agent_run_id)


def finish(conn: Conn, work: InFlight, workers: Callable[..., Any], dsn: str) -> None:
    """Finish everything through the API of HEAD, then a real worker process runs the rest."""
    held = [work.held, work.agent]
    beats = db.heartbeat(conn, work.worker_id, [c.attempt_id for c in held], [c.fencing_token for c in held])
    assert [b.status for b in beats] == ["held", "held"]
    db.complete_step(conn, work.held.attempt_id, work.held.fencing_token, {"held": True})

    a = work.agent
    transcript = db_agent.load_transcript(conn, a.attempt_id, a.fencing_token, work.agent_run_id)
    assert [(b.iteration, b.role) for b in transcript] == [(0, "user"), (1, "assistant")]
    db_agent.record_model_call(
        conn,
        a.attempt_id,
        a.fencing_token,
        work.agent_run_id,
        2,
        [{"type": "text", "text": "done"}],
        {"input_tokens": 1200, "output_tokens": 50},
        "claude-haiku-4-5",
        stop_reason="end_turn",
    )
    db.complete_step(conn, a.attempt_id, a.fencing_token, {"answer": "done"})

    db.approve(conn, work.gated.step_id, "approve", "ops")
    db.deregister_worker(conn, work.worker_id)

    workers(dsn, "--poll", "0.3", recipes="upgrade_recipes")
    wait_for(
        lambda: conn.execute("select count(*) = 0 from pgflight.runs where status = 'running'").fetchone()[0],  # type: ignore[index]
        60,
        "every run finished after the upgrade",
    )


def assert_every_step_ended_once(conn: Conn, work: InFlight, waits: int = 0) -> None:
    runs = dict(conn.execute("select status, count(*) from pgflight.runs group by status").fetchall())
    assert runs == {"succeeded": 7 + waits}, runs
    # each step has exactly one terminal attempt, and every attempt succeeded ...
    ends = conn.execute(
        "select s.id, count(a.id) filter (where a.status = any(%s))"
        "  from pgflight.steps s join pgflight.step_attempts a on a.step_id = s.id group by s.id",
        [list(TERMINAL)],
    ).fetchall()
    assert len(ends) == 10 + waits and all(n == 1 for _, n in ends), ends  # 7 roots + 3 children
    assert conn.execute(
        "select count(*) from pgflight.step_attempts where status <> 'succeeded'"
    ).fetchone() == (0,)
    # ... and the log says so once per step (no step finished twice, none lost)
    logged = conn.execute(
        "select step_id, count(*) from pgflight.run_events where to_status = any(%s) group by step_id",
        [list(TERMINAL)],
    ).fetchall()
    assert sorted(n for _, n in logged) == [1] * (10 + waits), logged
    assert invariant_violations(conn) == {}

    def result(step_id: int) -> Any:
        row = conn.execute("select result from pgflight.step_status where step_id = %s", [step_id]).fetchone()
        return row[0] if row else None

    assert result(work.held.step_id) == {"held": True}
    assert result(work.parent.step_id) == {"sum": 1 + 4 + 9}
    assert result(work.gated.step_id) == {"decision": "approve"}
    assert result(work.agent.step_id) == {"answer": "done"}
    agent = conn.execute(
        "select iterations, (select count(*) from pgflight.costs c where c.agent_run_id = r.id)"
        " from pgflight.agent_runs r where r.id = %s",
        [work.agent_run_id],
    ).fetchone()
    assert agent == (2, 2)


def _proconfig(conn: Conn, signature: str) -> list[str]:
    row = conn.execute("select proconfig from pg_proc where oid = %s::regprocedure", [signature]).fetchone()
    assert row is not None
    return list(row[0] or [])


def test_work_in_flight_on_0_9_finishes_once_after_the_upgrade_to_the_rebaselined_plan(
    deployed: Callable[..., str], tmp_path: Path, workers: Callable[..., Any]
) -> None:
    old = release_project(tmp_path / "old")
    target = deployed(OLD_RELEASE, root=old)
    assert migrate.registry_release(target) == migrate.UPGRADE_FROM
    with psycopg.connect(target, autocommit=True) as conn:
        work = put_work_in_flight(conn)
        migrate.deploy(target, to=WAITS_POINT, root=old)
        parked = park_waits(conn, work.worker_id)

        migrate.upgrade(target)  # what `pgflight migrate` runs
        assert migrate.registry_release(target) == "current"
        migrate.verify(target)
        # the new plan is recorded whole; the old plan's rows are kept under another project
        projects = dict(
            conn.execute("select project, count(*) from sqitch.changes group by project").fetchall()
        )
        # (one row per line of the plan: a change reworked after a tag is two changes of one name)
        plan_changes = [
            ln.split()[0] for ln in (ROOT / "sqitch.plan").read_text().splitlines() if ln[:1].isalpha()
        ]
        assert projects["pgflight"] == len(plan_changes)
        assert projects[migrate.RETIRED_PROJECT] > len(plan_changes)
        assert "Nothing to deploy" in migrate.upgrade(target)  # a second run: nothing to do
        # the schema a fresh deploy of this plan has, the history references of 0.9's text in words
        upgraded, fresh = migrate.dump_schema(target), (ROOT / "sql" / "schema.dump.sql").read_text()
        if migrate.dump_major(upgraded) == migrate.dump_major(fresh):
            assert upgraded == fresh

        wake_waits(conn, parked)
        finish(conn, work, workers, target)
        assert_every_step_ended_once(conn, work, waits=3)
        assert_waits_finished_on_one_attempt(conn, parked)


def test_an_upgrade_from_0_9_refuses_a_schema_that_is_not_0_9s(
    deployed: Callable[..., str], tmp_path: Path
) -> None:
    """A 0.9 database changed by hand is not recorded as 1.0: the registry stays the old plan's."""
    old = release_project(tmp_path / "old")
    target = deployed(OLD_RELEASE, root=old)
    with psycopg.connect(target, autocommit=True) as conn:
        conn.execute("alter table pgflight.runs add column by_hand text")
    with pytest.raises(migrate.MigrationError) as info:
        migrate.upgrade(target)
    assert "not the one the 0.9 plan deploys" in str(info.value)
    assert "by_hand" in info.value.output
    assert migrate.registry_release(target) == migrate.UPGRADE_FROM


def test_work_in_flight_finishes_once_after_an_upgrade_from_the_previous_tag(
    deployed: Callable[..., str], tmp_path: Path, workers: Callable[..., Any]
) -> None:
    target = deployed(previous_tag())
    with psycopg.connect(target, autocommit=True) as conn:
        work = put_work_in_flight(conn)
        parked = park_waits(conn, work.worker_id)

        project = copy_project(tmp_path / "project")
        reworked = rework_everything(project)
        assert len(reworked) > 50
        migrate.deploy(target, root=project)
        migrate.verify(target, root=project)
        # every function now runs its reworked body, with the settings its definition gives
        stale = conn.execute(
            "select p.oid::regprocedure::text from pg_proc p where p.pronamespace = 'pgflight'::regnamespace"
            " and p.prosrc not like '%reworked after @upgrade_test%'"
        ).fetchall()
        assert stale == []
        assert {"enable_sort=off", "jit=off"} <= set(_proconfig(conn, CLAIM_BATCH))

        wake_waits(conn, parked)
        finish(conn, work, workers, target)
        assert_every_step_ended_once(conn, work, waits=3)
        assert_waits_finished_on_one_attempt(conn, parked)


def test_rework_of_a_function_deploys_reverts_and_deploys_again_keeping_its_settings(
    deployed: Callable[..., str], tmp_path: Path
) -> None:
    """`sqitch rework` as CONTRIBUTING.md says, on a database at the previous tag."""
    target = deployed(previous_tag())
    project = copy_project(tmp_path / "project")
    sqitch(project, "tag", "roundtrip", "-n", "the round-trip test's release")
    sqitch(project, "rework", "functions/claim_batch", "-n", "claim_batch reworked by the round-trip test")
    mark_bodies(project / "sql/deploy/functions/claim_batch.sql", "round trip")
    gen_sql_scripts(project)

    def state(conn: Conn) -> tuple[bool, list[str]]:
        src = conn.execute(
            "select prosrc from pg_proc where oid = %s::regprocedure", [CLAIM_BATCH]
        ).fetchone()
        assert src is not None
        return "-- round trip" in src[0], _proconfig(conn, CLAIM_BATCH)

    with psycopg.connect(target, autocommit=True) as conn:
        assert {"enable_sort=off", "jit=off"} <= set(_proconfig(conn, CLAIM_BATCH))

        migrate.deploy(target, root=project)
        # HEAD's settings (its search_path puts pg_temp last), kept by the rework
        settings = _proconfig(conn, CLAIM_BATCH)
        assert {"enable_sort=off", "jit=off", "search_path=pg_catalog, pg_temp"} <= set(settings)
        assert state(conn) == (True, settings)
        migrate.verify(target, root=project)

        migrate.revert(target, to="@roundtrip", root=project)
        assert state(conn) == (False, settings)  # the previous definition, restored

        migrate.deploy(target, root=project)
        assert state(conn) == (True, settings)
        migrate.verify(target, root=project)


def test_a_rework_that_drops_a_setting_fails_verify(deployed: Callable[..., str], tmp_path: Path) -> None:
    """The verify scripts check proconfig: claim_batch without `set jit = off` does not deploy."""
    target = deployed(previous_tag())
    project = copy_project(tmp_path / "project")
    sqitch(project, "tag", "forgetful", "-n", "a release")
    sqitch(project, "rework", "functions/claim_batch", "-n", "forgets a setting")
    gen_sql_scripts(project)  # verify written from the full definition ...
    deploy = project / "sql/deploy/functions/claim_batch.sql"
    # ... then a setting lost (written `set jit = off` by hand, `SET jit TO 'off'` by pg_dump)
    text, lost = re.subn(
        r"^\s*set jit (?:=|to) '?off'?\n", "", deploy.read_text(), count=1, flags=re.I | re.M
    )
    assert lost == 1
    deploy.write_text(text)
    with pytest.raises(migrate.MigrationError) as info:
        migrate.deploy(target, root=project)
    assert "has settings" in info.value.output
    with psycopg.connect(target, autocommit=True) as conn:
        assert "jit=off" in _proconfig(conn, CLAIM_BATCH)  # sqitch reverted the change
