"""
Blast radius, worker side: one bad result or one hung recipe harms only its own step. Real
`pgflight worker` processes against real PostgreSQL.

- a result PostgreSQL refuses ({"score": NaN}) finishing together with three healthy
  steps fails alone, at once, with its real error; a receipt that cannot be stored stops the step
  instead of letting a retry act again;
- recipes that never return cannot take the worker's slots (deadline enforced by the
  worker; abandoned threads counted; restart at the limit).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgflight import db
from pgflight.worker import EXIT_RESTART
from worker_support import ChargeCounter, one, step_status, wait_for, worker_factory, worker_ready

RECIPES = "worker_recipes"
FAST = ("--poll", "0.3")


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """Worker subprocesses, SIGKILLed at teardown."""
    yield from worker_factory(tmp_path)


def _attempts(conn: psycopg.Connection[Any], step_id: int) -> list[tuple[str, Any]]:
    return [
        (r[0], r[1])
        for r in conn.execute(
            "select status, error from pgflight.step_attempts where step_id = %s order by attempt_no",
            [step_id],
        ).fetchall()
    ]


def test_nan_result_fails_alone_and_its_three_neighbours_succeed(
    conn: psycopg.Connection[Any], dsn: str, workers: Any
) -> None:
    """{"score": NaN} finishing at the same instant as three healthy steps (one complete_batch)."""
    db.create_workspace(conn, "w")
    w = workers(dsn, "--concurrency", "4", "--lease", "5", *FAST, recipes=RECIPES)
    wait_for(lambda: worker_ready(conn, w), 20, "the worker to register")
    at = time.time() + 3
    steps = [
        db.submit_run(
            conn, "w", "finish_at", {"at": at, "score": str(s)}, options={"max_attempts": 3}
        ).step_id
        for s in (1.0, "nan", 2.0, 3.0)
    ]
    wait_for(
        lambda: all(step_status(conn, s) in ("succeeded", "dead_letter") for s in steps),
        at - time.time() + 5,
        f"the four steps to end\n{w.output()[-3000:]}",
    )
    bad = steps[1]
    assert [step_status(conn, s) for s in steps] == ["succeeded", "dead_letter", "succeeded", "succeeded"]
    for s in (steps[0], steps[2], steps[3]):
        assert _attempts(conn, s) == [("succeeded", None)]
    ((status, error),) = _attempts(conn, bad)  # one attempt: fatal at once, no retry, no lease expiry
    assert status == "dead_letter"
    assert error["type"] == "BadPayload" and error["path"] == "$.score"
    assert "NaN" in error["message"] and "result of recipe 'finish_at'" in error["message"]
    assert one(conn, "select count(*) from pgflight.run_events where reason = 'lease_expired'") == 0
    assert one(
        conn,
        "select array_agg(result->>'score' order by step_id) from pgflight.step_status"
        " where step_id = any(%s) and status = 'succeeded'",
        [steps[0], steps[2], steps[3]],
    ) == ["1.0", "2.0", "3.0"]


def test_a_batch_the_server_refuses_is_completed_row_by_row(
    conn: psycopg.Connection[Any], dsn: str, workers: Any
) -> None:
    """The worker's check skipped: the server refuses the NaN batch, and still only that step fails."""
    db.create_workspace(conn, "w")
    w = workers(
        dsn,
        "--concurrency",
        "4",
        "--lease",
        "5",
        *FAST,
        recipes=RECIPES,
        env={"WORKER_TEST_SKIP_RESULT_CHECK": "1"},
    )
    wait_for(lambda: worker_ready(conn, w), 20, "the worker to register")
    at = time.time() + 3
    steps = [
        db.submit_run(conn, "w", "finish_at", {"at": at, "score": s}, options={"max_attempts": 3}).step_id
        for s in ("1", "nan", "2", "3")
    ]
    wait_for(
        lambda: all(step_status(conn, s) in ("succeeded", "dead_letter") for s in steps),
        at - time.time() + 5,
        f"the four steps to end\n{w.output()[-3000:]}",
    )
    assert [step_status(conn, s) for s in steps] == ["succeeded", "dead_letter", "succeeded", "succeeded"]
    ((_status, error),) = _attempts(conn, steps[1])
    # complete_step_text's answer: PostgreSQL's own refusal of the text, with its SQLSTATE
    assert error["sqlstate"] == "22P02" and "result refused by PostgreSQL" in error["message"], error
    assert "completing them one by one" in w.output()


def test_unstorable_receipt_ends_the_step_instead_of_acting_again(
    conn: psycopg.Connection[Any], dsn: str, workers: Any
) -> None:
    """An effect whose receipt holds Infinity: acted once, step dead-lettered, stand-in receipt kept."""
    bank = ChargeCounter()
    try:
        db.create_workspace(conn, "w")
        run = db.submit_run(conn, "w", "bad_receipt", {"url": bank.url}, options={"max_attempts": 3})
        w = workers(dsn, "--lease", "5", *FAST, recipes=RECIPES)
        wait_for(
            lambda: step_status(conn, run.step_id) == "dead_letter", 20, f"dead letter\n{w.output()[-2000:]}"
        )
        ((status, error),) = _attempts(conn, run.step_id)
        assert status == "dead_letter" and error["type"] == "Fatal"
        assert "effect 'charge' acted but its receipt cannot be stored" in error["message"]
        assert "Infinity" in error["message"] and "$.rate" in error["message"]
        receipt = db.find_effect(conn, run.step_id, "charge")
        assert receipt is not None and "Infinity" in receipt.result["pgflight_unstorable_receipt"]
        db.retry_step(conn, run.step_id)  # even an operator's retry does not act again
        wait_for(lambda: step_status(conn, run.step_id) == "succeeded", 20, "the retried step to end")
        assert bank.calls == 1
    finally:
        bank.close()


def _hung(conn: psycopg.Connection[Any], recipe: str, n: int, max_runtime_s: float) -> list[int]:
    db.create_workspace(conn, "w")
    return [
        db.submit_run(
            conn, "w", recipe, {}, options={"max_runtime_s": max_runtime_s, "max_attempts": 1}
        ).step_id
        for _ in range(n)
    ]


def _running(conn: psycopg.Connection[Any], steps: list[int]) -> bool:
    return all(step_status(conn, s) == "running" for s in steps)


def test_four_hung_sync_recipes_do_not_take_the_workers_slots(
    conn: psycopg.Connection[Any], dsn: str, workers: Any
) -> None:
    """Four sync recipes blocking forever (max_runtime_s 3), concurrency 4: a fifth step still runs."""
    hung = _hung(conn, "block_sync", 4, 3)
    w = workers(dsn, "--concurrency", "4", "--lease", "30", *FAST, recipes=RECIPES)
    wait_for(lambda: _running(conn, hung), 20, f"the four hung steps to start\n{w.output()[-2000:]}")
    started = time.monotonic()
    fifth = db.submit_run(conn, "w", "quick", {}).step_id
    wait_for(lambda: step_status(conn, fifth) == "succeeded", 3 + 3, f"the fifth step\n{w.output()[-3000:]}")
    assert time.monotonic() - started < 3 + 3  # the deadline, then at once (not a lease of 30 s)
    for s in hung:
        ((status, error),) = _attempts(conn, s)
        # the worker's own fail_step (DeadlineExceeded), or the server's deadline reclaim when a
        # claim_batch got there first: either way the attempt ended at its deadline
        assert status == "dead_letter" and "deadline exceeded" in error["message"].lower(), (status, error)
    assert w.proc.poll() is None  # 4 abandoned threads, under the default limit of 16: it carries on
    assert w.output().count("its thread is abandoned") == 4
    again = db.submit_run(conn, "w", "quick", {}).step_id  # and keeps all four slots
    wait_for(lambda: step_status(conn, again) == "succeeded", 5, "a sixth step")


def test_async_hang_recovers_at_the_deadline(conn: psycopg.Connection[Any], dsn: str, workers: Any) -> None:
    """An awaiting-forever async recipe (max_runtime_s 2) gives its only slot back at its deadline."""
    (hung,) = _hung(conn, "block_async", 1, 2)
    w = workers(dsn, "--concurrency", "1", "--lease", "30", *FAST, recipes=RECIPES)
    wait_for(lambda: _running(conn, [hung]), 20, f"the hung step to start\n{w.output()[-2000:]}")
    started = time.monotonic()
    nxt = db.submit_run(conn, "w", "quick", {}).step_id
    # a heartbeat is every 10 s here: only the worker's own deadline frees the slot this soon
    wait_for(lambda: step_status(conn, nxt) == "succeeded", 2 + 3, f"the next step\n{w.output()[-3000:]}")
    assert time.monotonic() - started < 2 + 3
    ((status, error),) = _attempts(conn, hung)
    assert status == "dead_letter" and "deadline exceeded" in error["message"].lower(), w.output()[-3000:]


def test_too_many_abandoned_threads_restart_the_worker(
    conn: psycopg.Connection[Any], dsn: str, workers: Any
) -> None:
    """PGFLIGHT_MAX_ABANDONED_THREADS=2: two abandoned threads and the worker exits 75 to be restarted."""
    hung = _hung(conn, "block_sync", 2, 2)
    w = workers(
        dsn, "--concurrency", "2", *FAST, recipes=RECIPES, env={"PGFLIGHT_MAX_ABANDONED_THREADS": "2"}
    )
    assert w.wait(20) == EXIT_RESTART, w.output()[-3000:]
    assert "2 recipe threads abandoned and still running: restarting the worker" in w.output()
    for s in hung:
        assert [a[0] for a in _attempts(conn, s)] == ["dead_letter"]  # ended, not left to a lease
    assert one(conn, "select count(*) from pgflight.workers where pid = %s and stopped_at is not null", w.pid)


def test_cancelled_hung_sync_recipe_gives_its_slot_back(
    conn: psycopg.Connection[Any], dsn: str, workers: Any
) -> None:
    """No max_runtime_s, concurrency 1: cancelling the hung step frees the slot a heartbeat later."""
    db.create_workspace(conn, "w")
    hung = db.submit_run(conn, "w", "block_sync", {})
    w = workers(dsn, "--concurrency", "1", "--lease", "3", *FAST, recipes=RECIPES)
    wait_for(lambda: step_status(conn, hung.step_id) == "running", 20, f"the hung step\n{w.output()[-2000:]}")
    db.cancel_run(conn, hung.run_id)
    nxt = db.submit_run(conn, "w", "quick", {}).step_id
    wait_for(lambda: step_status(conn, nxt) == "succeeded", 1 + 1 + 3, f"the next step\n{w.output()[-3000:]}")
    assert step_status(conn, hung.step_id) == "cancelled"
    assert "did not stop after its lease was lost or its run cancelled" in w.output()
