"""
Fair claim across workspaces, in-flight caps and concurrency keys.

The shapes are the issue's: workspace `bulk` submits a backlog, then `interactive` submits one
run; workers claim in batches of ten and complete at once. Caps and keys are checked from the
attempts table over a whole run of 8 concurrent claimers, not from what the claimers believed.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from core_helpers import (
    Conn,
    claim,
    complete_batch,
    fail,
    reclaim,
    register,
    rows,
    run_parallel,
    scalar,
    start_step,
    submit,
)
from worker_support import wait_for, workers  # noqa: F401 (workers: a fixture)

LEASED = ("claimed", "running", "cancel_requested")


def workspace(conn: Conn, name: str, **limits: Any) -> str:
    """Create a workspace, with limits when given."""
    conn.execute("select pgflight.create_workspace(%s)", [name])
    if limits:
        conn.execute("select pgflight.set_workspace_limits(%s, %s)", [name, Jsonb(limits)])
    return name


def bulk_submit(conn: Conn, ws: str, n: int, recipe: str = "bulk", **options: Any) -> None:
    """Submit n runs in one statement."""
    conn.execute(
        "select pgflight.submit_run(%s, %s, jsonb_build_object('i', g), %s) from generate_series(1, %s) g",
        [ws, recipe, Jsonb(options), n],
    )


def spawn_backlog(conn: Conn, ws: str, n: int, per_parent: int = 50_000) -> None:
    """
    Queue n steps of recipe `bulk` in `ws` quickly: parents (recipe `bulk_parent`) each fan out
    per_parent children in one spawn_children call built on the server.
    """
    parents = -(-n // per_parent)
    bulk_submit(conn, ws, parents, recipe="bulk_parent")
    worker = register(conn, "spawner")
    for c in claim(conn, worker, parents, 600.0, recipes=["bulk_parent"]):
        start_step(conn, c)
        conn.execute(
            "select pgflight.spawn_children(%s, %s, (select jsonb_agg(jsonb_build_object("
            "'key', g::text, 'recipe', 'bulk', 'input', '{}'::jsonb)) from generate_series(1, %s) g))",
            [c.attempt_id, c.token, per_parent],
        )


def rounds_until(conn: Conn, worker: int, run_id: int, batch: int = 10, max_rounds: int = 10) -> int:
    """Claim in batches of `batch` and complete at once until `run_id` is claimed; return the round."""
    for n in range(1, max_rounds + 1):
        got = claim(conn, worker, batch)
        assert got, "nothing claimable"
        complete_batch(conn, got)
        if any(c.run_id == run_id for c in got):
            return n
    raise AssertionError(f"run {run_id} not claimed within {max_rounds} rounds")


@pytest.mark.parametrize("backlog", [2_000, 200_000], ids=["2000+1", "200000+1"])
def test_a_quiet_workspace_is_served_within_two_rounds_of_a_backlog(conn: Conn, backlog: int) -> None:
    workspace(conn, "bulk")
    workspace(conn, "interactive")
    if backlog > 10_000:
        spawn_backlog(conn, "bulk", backlog)
    else:
        bulk_submit(conn, "bulk", backlog)
    quiet = submit(conn, "interactive_step", workspace="interactive")
    worker = register(conn)
    assert rounds_until(conn, worker, quiet.run_id) <= 2


def test_shares_weight_the_claim(conn: Conn) -> None:
    workspace(conn, "heavy", share=3)
    workspace(conn, "light")
    bulk_submit(conn, "heavy", 100)
    bulk_submit(conn, "light", 100)
    worker = register(conn)
    got = claim(conn, worker, 8)
    by_ws = rows(
        conn,
        "select w.name, count(*) as n from pgflight.step_attempts a join pgflight.runs r on r.id = a.run_id"
        " join pgflight.workspaces w on w.id = r.workspace_id where a.id = any(%s) group by w.name",
        [[c.attempt_id for c in got]],
    )
    assert {r["name"]: r["n"] for r in by_ws} == {"heavy": 6, "light": 2}


def test_priority_orders_work_inside_a_workspace(conn: Conn) -> None:
    workspace(conn, "a")
    workspace(conn, "b")
    bulk_submit(conn, "a", 5)
    urgent = submit(conn, "bulk", workspace="a", priority=10)
    bulk_submit(conn, "b", 5)
    worker = register(conn)
    got = claim(conn, worker, 2)
    assert urgent.run_id in [c.run_id for c in got]


def _max_concurrent(conn: Conn, where: str, params: list[Any]) -> int:
    """The most attempts matching `where` that were leased at one instant, from claimed_at/finished_at."""
    return int(
        scalar(
            conn,
            f"""
            with spans as (
              select a.claimed_at as t, 1 as d from pgflight.step_attempts a
               where a.claimed_at is not null and {where}
              union all
              select coalesce(a.finished_at, 'infinity'), -1 from pgflight.step_attempts a
               where a.claimed_at is not null and {where}
            )
            select coalesce(max(level), 0) from (
              select sum(d) over (order by t, d rows unbounded preceding) as level from spans) s
            """,
            params + params,
        )
    )


def _claimers(dsn: str, n_threads: int, seconds: float, batch: int = 5) -> None:
    """n_threads claimers, each on its own connection: claim, start, hold briefly, complete."""
    stop = time.monotonic() + seconds

    def work() -> None:
        with psycopg.connect(dsn, autocommit=True, options="-c statement_timeout=10000") as c:
            w = register(c, "claimer")
            while time.monotonic() < stop:
                got = claim(c, w, batch)
                if not got:
                    time.sleep(0.005)
                    continue
                for g in got:
                    start_step(c, g)
                time.sleep(0.002)
                complete_batch(c, got)

    run_parallel([work] * n_threads)


def test_caps_and_keys_hold_under_eight_concurrent_claimers(conn: Conn, dsn: str) -> None:
    workspace(conn, "capped", max_in_flight=3)
    workspace(conn, "keyed")
    workspace(conn, "free")
    bulk_submit(conn, "capped", 300)
    for customer in ("c1", "c2"):
        bulk_submit(conn, "keyed", 150, concurrency_key=customer, concurrency_limit=2)
    bulk_submit(conn, "free", 300)
    _claimers(dsn, 8, 6.0)

    ws = {r["name"]: r["id"] for r in rows(conn, "select id, name from pgflight.workspaces")}
    assert _max_concurrent(conn, "a.workspace_id = %s", [ws["capped"]]) <= 3
    for customer in ("c1", "c2"):
        assert _max_concurrent(conn, "a.concurrency_key = %s", [customer]) <= 2
    # and the limits were reached, so the check above could have failed
    assert _max_concurrent(conn, "a.workspace_id = %s", [ws["capped"]]) == 3
    assert _max_concurrent(conn, "a.concurrency_key = %s", ["c1"]) == 2
    assert _max_concurrent(conn, "a.workspace_id = %s", [ws["free"]]) > 3
    done = scalar(conn, "select count(*) from pgflight.step_attempts where status = 'succeeded'")
    assert done > 100


def test_a_global_cap_holds_under_eight_concurrent_claimers(conn: Conn, dsn: str) -> None:
    conn.execute("select pgflight.set_global_limits(%s)", [Jsonb({"max_in_flight": 4})])
    for name in ("a", "b", "c"):
        workspace(conn, name)
        bulk_submit(conn, name, 200)
    _claimers(dsn, 8, 4.0)
    assert _max_concurrent(conn, "true", []) == 4


def test_a_step_in_backoff_holds_no_key_slot(conn: Conn) -> None:
    workspace(conn, "k")
    first = submit(
        conn,
        "keyed",
        workspace="k",
        concurrency_key="repo",
        concurrency_limit=1,
        backoff={"base_s": 3600, "factor": 1},
    )
    second = submit(conn, "keyed", workspace="k", concurrency_key="repo", concurrency_limit=1)
    worker = register(conn)
    (c,) = claim(conn, worker, 1)
    assert c.run_id == first.run_id
    # the key is full: the second is parked, not claimed
    assert claim(conn, worker, 5) == []
    start_step(conn, c)
    fail(conn, c, {"message": "try later"})
    # the first waits an hour for its retry and holds no slot: the second runs now
    got = claim(conn, worker, 5)
    assert [g.run_id for g in got] == [second.run_id]


def test_a_full_key_parks_its_backlog_and_a_freed_slot_wakes_one(conn: Conn) -> None:
    workspace(conn, "k")
    bulk_submit(conn, "k", 1_000, concurrency_key="one", concurrency_limit=1)
    other = submit(conn, "other", workspace="k")
    worker = register(conn)
    got = claim(conn, worker, 10)
    # one of the key, and the unkeyed run behind the key's backlog
    assert len(got) == 2 and other.run_id in [g.run_id for g in got]
    parked = scalar(conn, "select count(*) from pgflight.step_attempts where available_after = 'infinity'")
    assert parked >= 9
    complete_batch(conn, got)
    woken = claim(conn, worker, 10)
    assert len(woken) == 1


def _slots_held(conn: Conn, scope: int) -> int:
    """What the stripes of a cap count as leased, committed returns included (tables/flow_slots)."""
    return int(
        scalar(
            conn,
            "select (select coalesce(sum(held), 0) from pgflight.flow_slots where scope = %s)"
            " - (select coalesce(sum(n), 0) from pgflight.flow_slot_returns where scope = %s)",
            [scope, scope],
        )
    )


def test_a_killed_workers_expired_leases_give_their_slots_back_after_reclaim(
    conn: Conn, dsn: str, workers: Any
) -> None:
    # C06's shape under caps: a worker leases as many steps as the caps allow and is SIGKILLed;
    # its leases expire, reclaim ends them, and the slots they held are free again
    workspace(conn, "capped", max_in_flight=3)
    conn.execute("select pgflight.set_global_limits(%s)", [Jsonb({"max_in_flight": 3})])
    conn.execute(
        "select pgflight.submit_run('capped', 'sleep', '{\"seconds\": 60}') from generate_series(1, 6)"
    )
    ws = scalar(conn, "select id from pgflight.workspaces where name = 'capped'")
    dead = workers(dsn, "--lease", "2", "--concurrency", "5", "--poll", "0.3")
    wait_for(
        lambda: scalar(conn, "select count(*) from pgflight.step_attempts where status = 'running'") == 3,
        20,
        "three steps running on the worker",
    )
    dead.kill()
    assert _slots_held(conn, ws) == 3 and _slots_held(conn, 0) == 3
    # the caps are full while the dead worker's leases last
    me = register(conn)
    assert claim(conn, me, 5, 60.0) == []
    reclaimed = [0]

    def all_reclaimed() -> bool:
        reclaimed[0] += reclaim(conn)
        return reclaimed[0] == 3

    wait_for(all_reclaimed, 15, "the dead worker's three leases to expire and be reclaimed")
    assert _slots_held(conn, ws) == 0 and _slots_held(conn, 0) == 0
    got = claim(conn, me, 5, 60.0)
    assert len(got) == 3
    # and the sweep's reconciliation agrees with the counters
    conn.execute("select pgflight.wake_parked_keys()")
    assert _slots_held(conn, ws) == 3 and _slots_held(conn, 0) == 3
    assert (
        scalar(conn, "select count(*) from pgflight.step_attempts where slots = 3 and status = 'claimed'")
        == 3
    )
