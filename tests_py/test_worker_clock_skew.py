"""
A worker times an attempt's deadline (``deadline_at``, from the step's ``max_runtime_s``) on the
database's clock, never on its host's wall clock: a host clock minutes off neither fails steps
that are within their deadline nor spares a step that overruns it.

The worker runs in a thread of the test process as the worker login over scram, against a real
database; the host's wall clock is skewed in-process (``datetime.now`` as the worker module sees
it, and ``time.time``), the database's clock is left alone.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, tzinfo
from typing import Any

import psycopg
import pytest

import pgflight.worker.executor
from conftest import Logins
from pgflight import db
from pgflight.recipes import Registry, StepContext
from pgflight.worker import Worker
from security_support import grant
from worker_support import one, wait_for

Conn = psycopg.Connection[Any]


@pytest.fixture
def running() -> Iterator[Callable[[Worker], Worker]]:
    """Run workers in threads (Worker.run: asyncio.run in a thread of its own); stopped at teardown."""
    started: list[tuple[Worker, threading.Thread]] = []
    failures: list[BaseException] = []

    def start(w: Worker) -> Worker:
        def target() -> None:
            try:
                w.run()
            except BaseException as e:  # re-raised at teardown
                failures.append(e)

        t = threading.Thread(target=target, name="test-worker", daemon=True)
        t.start()
        started.append((w, t))
        return w

    yield start
    for w, t in started:
        w.stop()
        t.join(30)
    if failures:
        raise failures[0]


def _skew_host_clock(monkeypatch: pytest.MonkeyPatch, skew_s: float) -> None:
    """Move this host's wall clock by `skew_s` seconds for the worker (not for the database)."""
    real_time = time.time

    class SkewedDatetime(datetime):
        @classmethod
        def now(cls, tz: tzinfo | None = None) -> Any:
            return datetime.now(tz) + timedelta(seconds=skew_s)

        @classmethod
        def utcnow(cls) -> Any:
            return datetime.utcnow() + timedelta(seconds=skew_s)

    monkeypatch.setattr(pgflight.worker.executor, "datetime", SkewedDatetime)
    monkeypatch.setattr(time, "time", lambda: real_time() + skew_s)


def _registry() -> Registry:
    async def quick(ctx: StepContext) -> Any:
        await asyncio.sleep(0.05)
        return {"ok": True}

    def quick_sync(ctx: StepContext) -> Any:
        threading.Event().wait(0.05)
        return {"ok": True}

    async def overrun(ctx: StepContext) -> Any:
        await asyncio.sleep(30)
        return {"ok": True}

    reg = Registry()
    reg.add("quick", quick)
    reg.add("quick_sync", quick_sync)
    reg.add("overrun", overrun)
    return reg


@pytest.mark.parametrize("skew_s", [600.0, -600.0], ids=["host_10_minutes_ahead", "host_10_minutes_behind"])
def test_deadlines_are_timed_on_the_database_clock_whatever_the_host_clock(
    conn: Conn, dsn: str, logins: Logins, running: Any, monkeypatch: pytest.MonkeyPatch, skew_s: float
) -> None:
    """
    With the host's wall clock ten minutes ahead or behind, steps with max_runtime_s 60 that take
    50 ms all succeed on their first attempt, and a step with max_runtime_s 1 that would take 30 s
    is still failed by the worker as deadline exceeded after about a second.
    """
    db.create_workspace(conn, "skew")
    grant(conn, "pgf_worker_a", "skew", "worker")
    quick = [
        db.submit_run(conn, "skew", recipe, {}, max_runtime_s=60, max_attempts=1).run_id
        for recipe in ("quick", "quick_sync", "quick", "quick_sync")
    ]
    slow = db.submit_run(conn, "skew", "overrun", {}, max_runtime_s=1, max_attempts=1).run_id
    _skew_host_clock(monkeypatch, skew_s)
    began = time.monotonic()
    running(
        Worker(
            logins.dsn("pgf_worker_a", dsn), _registry(), concurrency=8, poll_s=0.2, lease_s=30, listen=False
        )
    )
    wait_for(
        lambda: (
            one(
                conn,
                "select count(*) = 5 from pgflight.step_status where run_id = any(%s)"
                " and status in ('succeeded', 'dead_letter', 'failed')",
                [*quick, slow],
            )
            or None
        ),
        30,
        "the five steps to end",
    )
    took = time.monotonic() - began
    rows = conn.execute(
        "select run_id, status, attempt_no from pgflight.step_status where run_id = any(%s) order by run_id",
        [quick],
    ).fetchall()
    assert [(r[1], r[2]) for r in rows] == [("succeeded", 1)] * 4, rows
    error = one(
        conn,
        "select a.error from pgflight.step_attempts a join pgflight.steps s on s.id = a.step_id"
        " where s.run_id = %s",
        slow,
    )
    assert error is not None and "deadline exceeded" in error["message"], error
    assert took < 20, took
