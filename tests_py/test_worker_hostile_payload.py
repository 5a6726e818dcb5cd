"""
An input the Python worker cannot decode fails that step alone: JSON nested deeper than Python's
decoder can recurse (an array 5,000 or more deep, under every size cap) is claimed as text and
decoded row by row, so the steps claimed with it run, the deep one is dead-lettered with an error that says
why (UndecodableInput), and the worker process keeps running. Covered on each way a worker
claims: claim_batch (the poll), the listener's ticket claim and complete_and_claim. Real worker
processes and in-process workers against real PostgreSQL.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgflight import db
from pgflight.recipes import Registry
from pgflight.worker import WakeTickets, Worker, claim_with_ticket
from worker_support import WorkerProc, one, step_status, undecodable_json_depth, wait_for, worker_factory

Conn = psycopg.Connection[Any]

# {"a": [[[…]]]} nested deeper than this Python's json decoder goes: 5,001 levels (about 10 kB of
# JSON text) on Python 3.11, more on 3.13
DEPTH = undecodable_json_depth(5000)
DEEP = f"""('{{"a":' || repeat('[', {DEPTH}) || repeat(']', {DEPTH}) || '}}')::jsonb"""


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Callable[..., WorkerProc]]:
    """Worker subprocesses, SIGKILLed at teardown."""
    yield from worker_factory(tmp_path)


@pytest.fixture
def running() -> Iterator[Callable[[Worker], Worker]]:
    """Workers run in threads of the test process (Worker.run); stopped at teardown."""
    started: list[tuple[Worker, threading.Thread]] = []

    def start(w: Worker) -> Worker:
        t = threading.Thread(target=w.run, name="test-worker", daemon=True)
        t.start()
        started.append((w, t))
        return w

    yield start
    for w, t in started:
        w.stop()
        t.join(30)


def _submit_deep(conn: Conn, workspace: str, recipe: str) -> int:
    """
    Submit a run whose input nests DEPTH deep (sent as SQL, not built in Python): its step id. The
    depth cap is raised for it first: such an input is what a database holds that was written before
    the cap, or under a cap an owner raised.
    """
    conn.execute("update pgflight.settings set max_json_depth = %s", [DEPTH + 10])
    return int(one(conn, f"select step_id from pgflight.submit_run(%s, %s, {DEEP})", workspace, recipe))


def _batch(conn: Conn, workspace: str, recipe: str) -> tuple[list[int], int]:
    """Three innocent runs and a deep one between them, in one transaction: (innocent steps, deep step)."""
    with conn.transaction():
        first = db.submit_run(conn, workspace, recipe, {"i": 1}).step_id
        deep = _submit_deep(conn, workspace, recipe)
        rest = [db.submit_run(conn, workspace, recipe, {"i": i}).step_id for i in (2, 3)]
    return [first, *rest], deep


def _ended(conn: Conn, steps: list[int]) -> bool:
    return bool(
        one(
            conn,
            "select count(*) = cardinality(%s::bigint[]) from pgflight.step_status"
            " where step_id = any(%s::bigint[]) and status in ('succeeded', 'dead_letter', 'failed')",
            steps,
            steps,
        )
    )


def _assert_only_the_deep_one_failed(conn: Conn, innocent: list[int], deep: int) -> None:
    for s in innocent:
        assert step_status(conn, s) == "succeeded", s
        assert one(conn, "select count(*) from pgflight.step_attempts where step_id = %s", s) == 1
    assert step_status(conn, deep) == "dead_letter"
    assert one(conn, "select count(*) from pgflight.step_attempts where step_id = %s", deep) == 1
    error = one(conn, "select error from pgflight.step_attempts where step_id = %s", deep)
    assert error["type"] == "UndecodableInput", error
    assert f"nests {DEPTH + 1} levels deep" in error["message"], error
    assert "deeper than this worker can decode" in error["message"], error
    assert one(conn, "select count(*) from pgflight.run_events where reason = 'lease_expired'") == 0


# --- each claim function returns the batch, the deep row marked ------------------------------------


def _marked(claims: list[Any], innocent: list[int], deep: int) -> None:
    by_step = {c.step_id: c for c in claims}
    assert set(by_step) == {*innocent, deep}
    assert by_step[deep].input is None and f"nests {DEPTH + 1} levels deep" in (
        by_step[deep].input_error or ""
    )
    for s in innocent:
        assert by_step[s].input_error is None and "i" in by_step[s].input


def test_claim_batch_returns_an_undecodable_input_as_an_error_of_its_row(conn: Conn) -> None:
    db.create_workspace(conn, "w")
    innocent, deep = _batch(conn, "w", "quick")
    worker = db.register_worker(conn, "t", recipes=["quick"])
    _marked(db.claim_batch(conn, worker, batch_size=4, lease_s=30, start=True), innocent, deep)


def test_the_ticket_claim_returns_an_undecodable_input_as_an_error_of_its_row(conn: Conn) -> None:
    db.create_workspace(conn, "w")
    innocent, deep = _batch(conn, "w", "quick")
    worker = db.register_worker(conn, "t", recipes=["quick"])
    won, claims = claim_with_ticket(conn, WakeTickets(["quick"]).key("7"), worker, 4, 30, ["quick"])
    assert won
    _marked(claims, innocent, deep)
    conn.execute("select pg_advisory_unlock_all()")


def test_complete_and_claim_returns_an_undecodable_input_as_an_error_of_its_row(conn: Conn) -> None:
    db.create_workspace(conn, "w")
    held = db.submit_run(conn, "w", "quick", {"i": 0}).step_id
    worker = db.register_worker(conn, "t", recipes=["quick"])
    (claim,) = db.claim_batch(conn, worker, batch_size=1, lease_s=30, start=True)
    assert claim.step_id == held
    innocent, deep = _batch(conn, "w", "quick")
    done, claims = db.complete_and_claim(
        conn, worker, [claim.attempt_id], [claim.fencing_token], [{"ok": True}], batch_size=4, lease_s=30
    )
    assert [(d.attempt_id, d.outcome) for d in done] == [(claim.attempt_id, "succeeded")]
    _marked(claims, innocent, deep)


# --- whole workers: the batch runs, the deep step is dead-lettered, the process lives on -----------


def test_a_polling_worker_process_fails_the_deep_step_alone_and_keeps_running(
    conn: Conn, dsn: str, workers: Callable[..., WorkerProc]
) -> None:
    """Queued before the worker starts, so its first poll claims all four in one batch."""
    db.create_workspace(conn, "w")
    innocent, deep = _batch(conn, "w", "quick")
    w = workers(dsn, "--no-listen", "--concurrency", "4", "--batch-size", "4", "--poll", "0.2")
    wait_for(lambda: _ended(conn, [*innocent, deep]), 30, "the four steps to end")
    _assert_only_the_deep_one_failed(conn, innocent, deep)
    after = db.submit_run(conn, "w", "quick", {"i": 9}).step_id
    wait_for(lambda: step_status(conn, after) == "succeeded", 30, "a step submitted afterwards to run")
    assert w.proc.poll() is None, w.output()[-3000:]
    assert "RecursionError" not in w.output()


def test_a_listening_worker_process_fails_the_deep_step_alone_and_keeps_running(
    conn: Conn, dsn: str, workers: Callable[..., WorkerProc]
) -> None:
    """Submitted in one transaction while the worker sleeps on LISTEN: one ticket, one claim."""
    db.create_workspace(conn, "w")
    w = workers(dsn, "--concurrency", "4", "--batch-size", "4", "--poll", "30", "--log-level", "DEBUG")
    wait_for(lambda: "listening on pgflight_ready" in w.output(), 20, "the worker to listen")
    time.sleep(0.5)  # its catch-up claim is over
    innocent, deep = _batch(conn, "w", "quick")
    wait_for(lambda: _ended(conn, [*innocent, deep]), 30, "the four steps to end")
    _assert_only_the_deep_one_failed(conn, innocent, deep)
    assert "(listener)" in w.output()  # the ticket claim took them, not the 30 s poll
    assert w.proc.poll() is None, w.output()[-3000:]
    assert "RecursionError" not in w.output()


def test_a_deep_step_claimed_with_completions_fails_alone(conn: Conn, dsn: str, running: Any) -> None:
    """A backlog of 16 with the deep step in the middle: claims go out with completions
    (complete_and_claim); every other step succeeds once, the worker thread keeps running."""
    reg = Registry()
    reg.add("noop", lambda ctx: ctx.input)
    db.create_workspace(conn, "w")
    with conn.transaction():
        before = [db.submit_run(conn, "w", "noop", {"i": i}).step_id for i in range(8)]
        deep = _submit_deep(conn, "w", "noop")
        after = [db.submit_run(conn, "w", "noop", {"i": i}).step_id for i in range(8, 15)]
    w = running(Worker(dsn, reg, concurrency=4, batch_size=4, poll_s=0.3, lease_s=30))
    wait_for(lambda: _ended(conn, [*before, deep, *after]), 60, "the 16 steps to end")
    _assert_only_the_deep_one_failed(conn, [*before, *after], deep)
    assert w.combined_claims > 0
    late = db.submit_run(conn, "w", "noop", {"i": 99}).step_id
    wait_for(lambda: step_status(conn, late) == "succeeded", 30, "a step submitted afterwards to run")
