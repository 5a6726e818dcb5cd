"""
A batch's completions and the claim of the slots they free in one statement: while a
backlog lasts, the worker sends complete_batch and claim_batch together (one round trip, one
commit). Real workers (in a thread of the test process, so the recipes can record what runs at
once) against real PostgreSQL.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

import pgflight.worker.executor
from pgflight import db
from pgflight.recipes import Registry, StepContext
from pgflight.worker import Worker
from worker_support import one, wait_for

Conn = psycopg.Connection[Any]


@pytest.fixture
def running() -> Iterator[Callable[[Worker], Worker]]:
    """Run workers in threads (Worker.run: asyncio.run in a thread of its own); stopped at teardown."""
    started: list[tuple[Worker, threading.Thread]] = []
    errors: list[BaseException] = []

    def start(w: Worker) -> Worker:
        def target() -> None:
            try:
                w.run()
            except BaseException as e:  # re-raised at teardown
                errors.append(e)

        t = threading.Thread(target=target, name="test-worker", daemon=True)
        t.start()
        started.append((w, t))
        return w

    yield start
    for w, t in started:
        w.stop()
        t.join(30)
    if errors:
        raise errors[0]


def _commits(dsn: str) -> int:
    """Transactions committed in `dsn`'s database so far, read from another database (the read
    itself is not counted), once no backend of it is left (a backend reports its counts at exit)."""
    params = conninfo_to_dict(dsn)
    with psycopg.connect(make_conninfo(dsn, dbname="postgres"), autocommit=True) as c:
        wait_for(
            lambda: (
                one(c, "select count(*) = 0 from pg_stat_activity where datname = %s", params["dbname"])
                or None
            ),
            30,
            "the database's backends to exit",
        )
        c.execute("select pg_stat_clear_snapshot()")
        return int(one(c, "select xact_commit from pg_stat_database where datname = %s", params["dbname"]))


def _noop_registry() -> Registry:
    reg = Registry()
    reg.add("noop", lambda ctx: ctx.input)
    return reg


def test_a_burn_down_commits_about_once_per_batch(conn: Conn, dsn: str, running: Any) -> None:
    """800 no-op runs, 8 in flight: one commit per batch for completions and claim together,
    below the two commits per batch (0.25 per job) that a separate claim and completion cost."""
    n = 800
    db.create_workspace(conn, "burn")
    db.submit_many(conn, "burn", [{"recipe": "noop", "input": {"i": i}} for i in range(n)])
    # autovacuum's transactions count in the database's commits too (a visit during the run added
    # a dozen here, more on a slower machine): the tables are left out of it while the worker runs
    tables = conn.execute(
        "select c.oid::regclass::text from pg_class c where c.relnamespace = 'pgflight'::regnamespace"
        " and c.relkind = 'r'"
    ).fetchall()
    for (table,) in tables:
        conn.execute(f"alter table {table} set (autovacuum_enabled = off, toast.autovacuum_enabled = off)")
    conn.close()  # no backend of the test's own counts from here on
    before = _commits(dsn)
    w = running(Worker(dsn, _noop_registry(), concurrency=8, batch_size=8, poll_s=0.5))
    wait_for(lambda: w.steps_done >= n or None, 120, f"the {n} steps to finish")
    w.stop()
    wait_for(lambda: (w._loop is not None and w._loop.is_closed()) or None, 30, "the worker to stop")
    per_job = (_commits(dsn) - before) / n
    with psycopg.connect(dsn, autocommit=True) as c:
        assert one(c, "select count(*) from pgflight.step_attempts where status = 'succeeded'") == n
        assert one(c, "select count(*) from pgflight.step_attempts") == n  # each claimed once
    # Separate claim and completion commits cost at least two per batch of 8 (0.25 per job);
    # idle, the combined shape measures about 0.15, and a loaded machine splits some batches.
    assert per_job < 0.25, per_job
    assert w.combined_claims > 0


def test_never_more_steps_at_once_than_concurrency(conn: Conn, dsn: str, running: Any) -> None:
    """Steps that record their start and end: under claims sent with completions, never more
    than `concurrency` run at once (the claim counts the slots the completions free)."""
    lock = threading.Lock()
    now, most, starts = 0, 0, 0

    def tracked(ctx: StepContext) -> Any:
        nonlocal now, most, starts
        with lock:
            now += 1
            starts += 1
            most = max(most, now)
        threading.Event().wait(0.002 * (ctx.input["i"] % 3))
        with lock:
            now -= 1
        return None

    async def tracked_async(ctx: StepContext) -> Any:
        nonlocal now, most, starts
        with lock:
            now += 1
            starts += 1
            most = max(most, now)
        await asyncio.sleep(0.001 * (ctx.input["i"] % 4))
        with lock:
            now -= 1
        return {"i": ctx.input["i"]}

    reg = Registry()
    reg.add("tracked", tracked)
    reg.add("tracked_async", tracked_async)
    db.create_workspace(conn, "slots")
    runs = [{"recipe": "tracked" if i % 2 else "tracked_async", "input": {"i": i}} for i in range(600)]
    db.submit_many(conn, "slots", runs)
    w = running(Worker(dsn, reg, concurrency=5, batch_size=5, poll_s=0.5))
    wait_for(
        lambda: (
            one(conn, "select count(*) = 600 from pgflight.step_attempts where status = 'succeeded'") or None
        ),
        120,
        "the 600 steps to succeed",
    )
    assert w.combined_claims > 0
    assert one(conn, "select count(*) from pgflight.step_attempts") == 600  # each claimed once
    assert starts == 600
    assert 1 < most <= 5, most


def test_a_bad_result_in_a_combined_batch_fails_alone_and_the_rest_completes(
    conn: Conn, dsn: str, running: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker's own check skipped: the server refuses the batch that carries a NaN result, and
    the claim sent with it; the batch is completed one by one (only the NaN step fails) and the
    queued steps behind it are claimed and complete, each once."""
    # NaN passes the worker's own check
    monkeypatch.setattr(pgflight.worker.executor, "check_json", lambda value, **kw: json.dumps(value))
    started = 0
    together = asyncio.Event()

    async def finish_together(ctx: StepContext) -> Any:
        nonlocal started
        started += 1
        if started == 4:
            together.set()
        await together.wait()  # the first four return in one loop pass: one complete_batch
        return {"score": float(ctx.input["score"])}

    reg = Registry()
    reg.add("score", finish_together)
    db.create_workspace(conn, "bad")
    first = [{"recipe": "score", "input": {"score": s}} for s in ("1", "nan", "2", "3")]
    behind = [{"recipe": "score", "input": {"score": str(i)}} for i in range(8)]
    db.submit_many(conn, "bad", first + behind, options={"max_attempts": 3})
    w = running(Worker(dsn, reg, concurrency=4, batch_size=4, poll_s=0.3, lease_s=30))
    wait_for(
        lambda: (
            one(
                conn,
                "select count(*) = 12 from pgflight.step_status where status in ('succeeded', 'dead_letter')",
            )
            or None
        ),
        60,
        "the 12 steps to end",
    )
    rows = conn.execute(
        "select t.input->>'score', s.status,"
        " (select count(*) from pgflight.step_attempts a where a.step_id = s.step_id)"
        " from pgflight.step_status s join pgflight.steps t on t.id = s.step_id order by s.step_id"
    ).fetchall()
    assert [r[1] for r in rows] == ["succeeded", "dead_letter"] + ["succeeded"] * 10, rows
    assert all(r[2] == 1 for r in rows), rows  # one attempt each: nothing claimed twice, nothing lapsed
    error = one(conn, "select error from pgflight.step_attempts where status = 'dead_letter'")
    # failed by complete_step_text in the same call: the parser's refusal, with its SQLSTATE
    assert error["sqlstate"] == "22P02" and "result refused by PostgreSQL" in error["message"], error
    assert one(conn, "select count(*) from pgflight.run_events where reason = 'lease_expired'") == 0
    assert w.combined_claims > 0


def test_a_step_without_max_runtime_s_arms_no_timer(conn: Conn, dsn: str, running: Any) -> None:
    """Its deadline_at is the claim + the runtime_s limit (a year away): no timer per step for it
    (the server's deadline sweep covers it), where a timer per running step would cost every step."""
    gate = threading.Event()
    began = threading.Semaphore(0)

    def held_sync(ctx: StepContext) -> Any:
        began.release()
        gate.wait(30)
        return None

    async def held_async(ctx: StepContext) -> Any:
        began.release()
        await asyncio.get_running_loop().run_in_executor(None, gate.wait, 30)
        return None

    reg = Registry()
    reg.add("held_sync", held_sync)
    reg.add("held_async", held_async)
    db.create_workspace(conn, "timers")
    db.submit_many(conn, "timers", [{"recipe": "held_sync"}, {"recipe": "held_async"}])
    w = running(Worker(dsn, reg, concurrency=2, poll_s=0.5))
    try:
        for _ in range(2):
            assert began.acquire(timeout=30)

        async def far_timers() -> list[float]:
            loop = asyncio.get_running_loop()
            scheduled: list[asyncio.TimerHandle] = loop._scheduled  # type: ignore[attr-defined]
            return [h.when() - loop.time() for h in scheduled if not h.cancelled()]

        assert w._loop is not None
        left = asyncio.run_coroutine_threadsafe(far_timers(), w._loop).result(10)
        assert one(conn, "select count(*) from pgflight.step_attempts where deadline_at is not null") == 2
        assert [s for s in left if s > 86400] == [], left
    finally:
        gate.set()
    wait_for(
        lambda: (
            one(conn, "select count(*) = 2 from pgflight.step_attempts where status = 'succeeded'") or None
        ),
        30,
        "the two steps to succeed",
    )
