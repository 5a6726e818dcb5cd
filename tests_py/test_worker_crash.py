"""
The worker process against crashes and signals: real `pgflight worker` subprocesses, real
PostgreSQL. kill -9 (C06, C39 c), SIGSTOP past the lease (C02), a crash between an external
effect and the step's completion (effect receipts), SIGTERM with steps in flight (C39 a, b),
a CPU-bound recipe against its lease (C04 b).
"""

from __future__ import annotations

import http.server
import json
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgflight import db, errors
from worker_support import attempts, one, step_status, wait_for, worker_factory

FAST = ("--poll", "0.3")


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """Worker subprocesses, SIGKILLed at teardown."""
    yield from worker_factory(tmp_path)


def _submit(conn: psycopg.Connection[Any], recipe: str, input: Any, **options: Any) -> db.models.SubmittedRun:
    db.create_workspace(conn, "w")
    return db.submit_run(conn, "w", recipe, input, options=options)


def _running(conn: psycopg.Connection[Any], step_id: int) -> bool:
    return step_status(conn, step_id) == "running"


def test_c06_c39_kill9_mid_step_step_completes_on_another_worker(conn, dsn, workers) -> None:
    run = _submit(conn, "sleep", {"seconds": 2.0})
    a = workers(dsn, "--lease", "2", *FAST)
    wait_for(lambda: _running(conn, run.step_id), 10, "the step to start on worker A")
    a.kill()  # SIGKILL mid-step: nothing is released
    killed_at = time.monotonic()
    b = workers(dsn, "--lease", "2", *FAST)
    wait_for(lambda: step_status(conn, run.step_id) == "succeeded", 2 + 5 + 2, "the step to succeed on B")
    assert time.monotonic() - killed_at < 2 + 5 + 2  # lease + 5 s (+2 s for B's start-up)
    tries = attempts(conn, run.step_id)
    assert [t[1] for t in tries] == ["lease_expired", "succeeded"]
    assert tries[0][2] != tries[1][2]
    assert (
        one(
            conn,
            "select count(*) from pgflight.run_events where step_id = %s and reason = 'succeeded'",
            run.step_id,
        )
        == 1
    )
    b.kill()


def test_c02_sigstop_past_lease_late_write_rejected_and_abandoned(conn, dsn, workers) -> None:
    run = _submit(conn, "sleep", {"seconds": 2.5})
    a = workers(dsn, "--lease", "1.5", *FAST)
    wait_for(lambda: _running(conn, run.step_id), 10, "the step to start on worker A")
    token_a = one(conn, "select fencing_token from pgflight.step_attempts where step_id = %s", run.step_id)
    attempt_a = one(conn, "select id from pgflight.step_attempts where step_id = %s", run.step_id)
    a.signal(signal.SIGSTOP)
    try:
        time.sleep(2.0)  # past the 1.5 s lease
        assert db.reclaim_expired(conn) == 1
        b = workers(dsn, "--lease", "5", *FAST)
        wait_for(
            lambda: one(
                conn,
                "select count(*) from pgflight.step_attempts where step_id = %s and status in"
                " ('running', 'succeeded')",
                run.step_id,
            ),
            10,
            "worker B to take attempt 2",
        )
    finally:
        a.signal(signal.SIGCONT)
    wait_for(lambda: "abandon" in a.output(), 5, "worker A to abandon the attempt")
    # A late write with A's token is refused with ZF001 (and logged again).
    with pytest.raises(errors.LeaseLost):
        db.complete_step(conn, attempt_a, token_a, {"late": True})
    wait_for(lambda: step_status(conn, run.step_id) == "succeeded", 10, "attempt 2 to succeed")
    tries = attempts(conn, run.step_id)
    assert [t[1] for t in tries] == ["lease_expired", "succeeded"]
    reasons = [
        r[0]
        for r in conn.execute(
            "select reason from pgflight.run_events where attempt_id = %s order by id", [attempt_a]
        ).fetchall()
    ]
    assert "lease_expired" in reasons and "stale_result_rejected" in reasons
    assert reasons.index("lease_expired") < reasons.index("stale_result_rejected")
    assert "succeeded" not in reasons
    assert one(conn, "select result from pgflight.step_status where step_id = %s", run.step_id) == {
        "slept": 2.5
    }
    assert a.proc.poll() is None, "worker A keeps running after abandoning the attempt"
    b.kill()


class _Counter(http.server.BaseHTTPRequestHandler):
    calls = 0

    def do_POST(self) -> None:
        type(self).calls += 1
        body = json.dumps({"charge_id": f"ch_{type(self).calls}"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def http_counter() -> Iterator[tuple[str, type[_Counter]]]:
    handler = type("Counter", (_Counter,), {"calls": 0})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/charge", handler
    server.shutdown()
    server.server_close()


def test_crash_between_effect_and_completion_retry_finds_receipt(conn, dsn, workers, http_counter) -> None:
    url, counter = http_counter
    run = _submit(conn, "charge", {"url": url, "crash_on_attempt": 1})
    a = workers(dsn, "--lease", "1.5", *FAST)
    wait_for(lambda: a.proc.poll() is not None, 10, "worker A to crash after the effect")
    assert counter.calls == 1
    assert one(conn, "select count(*) from pgflight.effects where step_id = %s", run.step_id) == 1
    workers(dsn, "--lease", "1.5", *FAST)
    wait_for(lambda: step_status(conn, run.step_id) == "succeeded", 15, "the retry to succeed")
    assert counter.calls == 1, "the retry must find the receipt and not call again"
    result = one(conn, "select result from pgflight.step_status where step_id = %s", run.step_id)
    assert result == {"receipt": {"charge_id": "ch_1"}, "attempt": 2}


def test_c39_sigterm_finishes_short_steps_and_releases_long_ones(conn, dsn, workers) -> None:
    short = [_submit(conn, "sleep", {"seconds": 1.0}, priority=1) for _ in range(2)]
    long = [_submit(conn, "sleep", {"seconds": 60.0}) for _ in range(2)]
    w = workers(dsn, "--concurrency", "4", "--lease", "5", "--grace", "3", *FAST)
    wait_for(lambda: all(_running(conn, r.step_id) for r in short + long), 10, "all 4 steps running")
    w.signal(signal.SIGTERM)
    t0 = time.monotonic()
    assert w.wait(10) == 0
    assert time.monotonic() - t0 < 3 + 3  # grace + a little
    for r in short:  # (a) finished within the grace period: completed normally
        assert attempts(conn, r.step_id) == [(1, "succeeded", attempts(conn, r.step_id)[0][2])]
    for r in long:  # (b) released: claimable at once, no attempt spent
        assert step_status(conn, r.step_id) == "queued"
        assert one(conn, "select failed_attempts from pgflight.steps where id = %s", r.step_id) == 0
        assert len(attempts(conn, r.step_id)) == 1
        assert (
            one(
                conn,
                "select available_after <= pgflight._now() from pgflight.step_attempts where step_id = %s",
                r.step_id,
            )
            is True
        )
        assert (
            one(
                conn,
                "select count(*) from pgflight.run_events where step_id = %s and reason = 'released'",
                r.step_id,
            )
            == 1
        )
    assert one(conn, "select stopped_at is not null from pgflight.workers where pid = %s", w.pid) is True


def test_c04_cpu_bound_recipe_keeps_its_lease(conn, dsn, workers) -> None:
    run = _submit(conn, "spin", {"seconds": 10.0})
    workers(dsn, "--lease", "4", *FAST)
    wait_for(lambda: _running(conn, run.step_id), 10, "the step to start")
    reclaimed = 0
    deadline = time.monotonic() + 20
    while step_status(conn, run.step_id) != "succeeded" and time.monotonic() < deadline:
        reclaimed += db.reclaim_expired(conn)  # the sweep runs all along
        time.sleep(0.25)
    assert reclaimed == 0
    assert [t[1] for t in attempts(conn, run.step_id)] == ["succeeded"]
    assert (
        one(
            conn,
            "select count(*) from pgflight.run_events where step_id = %s and reason = 'lease_expired'",
            run.step_id,
        )
        == 0
    )


def test_c04_heartbeat_interval_over_lease_third_is_clamped(caplog: pytest.LogCaptureFixture) -> None:
    from pgflight.heartbeat import clamp_interval

    assert clamp_interval(3.0, 3.0) == pytest.approx(1.0)
    assert "clamped" in caplog.text
    assert clamp_interval(3.0, 0.5) == 0.5
    assert clamp_interval(6.0, None) == pytest.approx(2.0)
