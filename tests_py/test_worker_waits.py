"""
Waits through real worker processes: a recipe sleeps without spending attempts, a recipe waits
for an event that another connection emits and receives its payload, and a worker SIGKILLed while
its step is parked loses nothing (the parked step holds no lease). The sweeps run on a thread of
the test, as pg_cron's sweep_loop would run them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgflight import db
from worker_support import one, step_status, sweeping, wait_for, worker_factory

FAST = ("--poll", "0.3")


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """Worker subprocesses, SIGKILLed at teardown."""
    yield from worker_factory(tmp_path)


@pytest.fixture
def sweeper(dsn: str) -> Iterator[None]:
    """run_sweeps every 0.2 s on a connection of its own, for as long as the test runs."""
    with sweeping(dsn):
        yield


def _attempts(conn: psycopg.Connection[Any], step_id: int) -> list[tuple[int, str]]:
    return [
        (int(r[0]), str(r[1]))
        for r in conn.execute(
            "select attempt_no, status from pgflight.step_attempts where step_id = %s order by id", [step_id]
        ).fetchall()
    ]


def test_a_recipe_that_sleeps_3_s_twice_costs_one_attempt_and_ends_after_6_s(
    conn, dsn, workers, sweeper, tmp_path
) -> None:
    db.create_workspace(conn, "w")
    counter = tmp_path / "counter"
    started = time.monotonic()
    run = db.submit_run(conn, "w", "sleep_twice", {"counter": str(counter)})
    workers(dsn, *FAST, recipes="wait_recipes")
    wait_for(lambda: step_status(conn, run.step_id) == "awaiting_approval", 15, "the first sleep to park")
    wait_for(lambda: step_status(conn, run.step_id) == "succeeded", 30, "the step to succeed")
    took = time.monotonic() - started
    print(f"two sleeps of 3 s: the step ended {took:.2f} s after its submit")
    assert took >= 6.0, f"two sleeps of 3 s ended after {took:.2f} s"
    assert _attempts(conn, run.step_id) == [(1, "succeeded")]  # one attempt, never failed
    assert one(conn, "select failed_attempts from pgflight.steps where id = %s", run.step_id) == 0
    result = one(conn, "select result from pgflight.step_attempts where step_id = %s", run.step_id)
    assert result == {"before": 1, "attempt_no": 1}
    assert counter.read_text() == "x\n"  # the effect before the sleeps ran once over three runs
    reasons = [
        r[0]
        for r in conn.execute(
            "select reason from pgflight.run_events where step_id = %s and reason like 'wait%%' order by id",
            [run.step_id],
        ).fetchall()
    ]
    assert reasons == ["wait_parked", "wait_resolved", "wait_parked", "wait_resolved"]


def test_a_recipe_waiting_on_an_event_gets_the_payload_emitted_from_another_connection(
    conn, dsn, workers, sweeper, tmp_path
) -> None:
    db.create_workspace(conn, "w")
    run = db.submit_run(conn, "w", "await_paid", {"counter": str(tmp_path / "counter"), "order": 42})
    workers(dsn, *FAST, recipes="wait_recipes")
    wait_for(lambda: step_status(conn, run.step_id) == "awaiting_approval", 15, "the wait to park")
    with psycopg.connect(dsn, autocommit=True) as other:
        got = db.emit_event(other, "w", "order.paid", "42", {"usd": 12.5, "by": "card"}, event_id="pay-42")
    assert (got.emitted, got.woken) == (True, 1)
    wait_for(lambda: step_status(conn, run.step_id) == "succeeded", 15, "the step to succeed")
    result = one(conn, "select result from pgflight.step_attempts where step_id = %s", run.step_id)
    assert result["payload"] == {"usd": 12.5, "by": "card"}
    assert _attempts(conn, run.step_id) == [(1, "succeeded")]


def test_a_worker_sigkilled_while_its_step_is_parked_loses_nothing(
    conn, dsn, workers, sweeper, tmp_path
) -> None:
    db.create_workspace(conn, "w")
    counter = tmp_path / "counter"
    run = db.submit_run(
        conn, "w", "await_paid", {"counter": str(counter), "order": 7}, options={"lease_s": 2}
    )
    a = workers(dsn, "--lease", "2", *FAST, recipes="wait_recipes")
    wait_for(lambda: step_status(conn, run.step_id) == "awaiting_approval", 15, "the wait to park")
    a.kill()
    time.sleep(3)  # past the lease: a parked step holds none, so nothing is reclaimed
    assert step_status(conn, run.step_id) == "awaiting_approval"
    assert (
        one(
            conn,
            "select count(*) from pgflight.run_events where step_id = %s and reason = 'lease_expired'",
            run.step_id,
        )
        == 0
    )
    got = db.emit_event(conn, "w", "order.paid", "7", {"ok": True})
    assert got.woken == 1
    workers(dsn, "--lease", "2", *FAST, recipes="wait_recipes")
    wait_for(
        lambda: step_status(conn, run.step_id) == "succeeded", 15, "the step to succeed on another worker"
    )
    result = one(conn, "select result from pgflight.step_attempts where step_id = %s", run.step_id)
    assert result["payload"] == {"ok": True}
    assert result["pid"] != a.pid
    assert _attempts(conn, run.step_id) == [(1, "succeeded")]
    assert counter.read_text() == "x\n"


def test_an_event_wait_that_times_out_returns_its_default_to_the_recipe(
    conn, dsn, workers, sweeper, tmp_path
) -> None:
    db.create_workspace(conn, "w")
    inp = {"counter": str(tmp_path / "counter"), "order": 9, "timeout_s": 1, "default": {"paid": False}}
    run = db.submit_run(conn, "w", "await_paid", inp)
    workers(dsn, *FAST, recipes="wait_recipes")
    wait_for(
        lambda: step_status(conn, run.step_id) == "succeeded", 20, "the wait to time out and the step to end"
    )
    result = one(conn, "select result from pgflight.step_attempts where step_id = %s", run.step_id)
    assert result["payload"] == {"paid": False}
    assert _attempts(conn, run.step_id) == [(1, "succeeded")]
    assert one(conn, "select outcome from pgflight.waits where step_id = %s", run.step_id) == "timed_out"


def test_an_approval_hands_its_payload_and_reason_to_the_recipe(conn, dsn, workers, logins) -> None:
    db.create_workspace(conn, "w")
    run = db.submit_run(conn, "w", "ship_on_approval", {"to": "customer"})
    workers(dsn, *FAST, recipes="wait_recipes")
    wait_for(lambda: step_status(conn, run.step_id) == "awaiting_approval", 15, "the gate to park the step")
    conn.execute("select pgflight.grant_workspace('pgf_operator_a', 'w', 'operator')")
    with psycopg.connect(logins.dsn("pgf_operator_a", dsn), autocommit=True) as c:  # a real operator login
        got = db.approve(c, run.step_id, "approve", "alice", note="via the depot", payload={"to": "depot"})
    assert got.applied
    wait_for(lambda: step_status(conn, run.step_id) == "succeeded", 15, "the step to succeed")
    result = one(conn, "select result from pgflight.step_attempts where step_id = %s", run.step_id)
    assert result["decision"] == "approve"
    assert result["payload"] == {"to": "depot"}
    assert result["note"].startswith("via the depot")
    assert _attempts(conn, run.step_id) == [(1, "succeeded")]
