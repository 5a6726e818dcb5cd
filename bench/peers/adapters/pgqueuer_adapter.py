#!/usr/bin/env python3
"""
PgQueuer 1.6.0's adapter for bench/peers (protocol: bench/peers/PROTOCOL.md). Runs with the peers'
virtualenv (bench/peers/.venv) and uses PgQueuer's own API throughout, as its documentation
recommends for throughput (docs/guides/performance-tuning.md, docs/guides/programmatic-run.md,
docs/guides/completion-tracking.md and docs/reference/drivers.md in janbjorge/pgqueuer):

- driver: `AsyncpgDriver` on one direct asyncpg connection per process, the docs' choice for
  throughput ("asyncpg achieves roughly double the throughput of psycopg", docs/development/
  benchmark.md; "Always use a direct asyncpg connection for the QueueManager", performance
  tuning), and the event loop `pgq run` uses, uvloop. Needs asyncpg (pinned 0.32.0), which is
  not a dependency of pgqueuer itself. (PgQueuer's `PsycopgDriver` keeps its connection's lock
  while it waits up to 1 s for a NOTIFY, so the worker's own queries stall when none comes:
  a 500-child fanout took 130 s with it);
- setup: `Queries.install()` (what `pgq install` runs; durability `durable`, the default, every
  table WAL-logged like the other systems) then `Queries.optimize_autovacuum()` (`pgq autovac`,
  first item of the docs' performance checklist);
- enqueue: the batch form of `Queries.enqueue` (lists of entrypoints / payloads / priorities: one
  statement per list), 1,000 jobs per call;
- work: `pgqueuer.run(factory, batch_size=…, max_concurrent_tasks=…)`, the programmatic `pgq run`,
  whose signal handlers turn SIGTERM into its graceful shutdown: no more dequeues, jobs in flight
  finish, the buffered completions are flushed, then `run` returns. `max_concurrent_tasks = C`
  caps the jobs this worker holds; `batch_size` is the largest PgQueuer allows under that cap
  (`max_concurrent_tasks >= 2 * batch_size`): C // 2 ("increase batch_size when jobs are
  short-lived"); other settings are the defaults (LISTEN/NOTIFY on `ch_pgqueuer`,
  dequeue_timeout 30 s as the polling fallback, heartbeat_timeout 30 s). `ready` is said at the
  worker's first dequeue, once its LISTEN is on; before that the worker loads anyio's asyncio
  backend, a lazy import (~45 ms) that PgQueuer's dispatch would otherwise make its first job pay;
- produce: the scalar form of `Queries.enqueue`, after one empty batch that prepares the statement;
- fanout: PgQueuer has no flows, but documents `CompletionWatcher` (LISTEN/NOTIFY on job status,
  no polling loop of ours) to await many jobs: the parent job enqueues the N children in one
  batch, awaits them all with the watcher, and its code after that await is the continuation.
  The parent holds a worker slot while it waits and is not durable: a parent whose worker dies
  runs again from the start (re-enqueueing its children);
- completions: PgQueuer deletes a finished job (and its payload) from `pgqueuer` and writes a
  `successful` row to `pgqueuer_log`, keyed by PgQueuer's own job id only, so a completion time
  cannot be tied to the bench's job id: `completed_at` is null (see `source`).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib.metadata import version as dist_version
from typing import Any

import anyio
import common
import uvloop

try:
    import asyncpg
except ImportError:  # pragma: no cover
    sys.exit("the pgqueuer adapter needs asyncpg in bench/peers/.venv: pip install asyncpg==0.32.0")

import pgqueuer
from pgqueuer.core.completion import CompletionWatcher
from pgqueuer.db import AsyncpgDriver
from pgqueuer.models import Job
from pgqueuer.qm import QueueManager
from pgqueuer.queries import Queries

ENQUEUE_CHUNK = 1_000
PARENT = "parent"


@asynccontextmanager
async def _driver(dsn: str) -> AsyncIterator[AsyncpgDriver]:
    """PgQueuer's asyncpg driver on a connection of its own, closed on exit."""
    conn = await asyncpg.connect(dsn)
    try:
        yield AsyncpgDriver(conn)
    finally:
        await conn.close()


def _encode(body: dict[str, Any]) -> bytes:
    return json.dumps(body).encode()


def _settings(concurrency: int) -> dict[str, Any]:
    """run()'s throughput settings for C jobs in flight (see the module docstring)."""
    batch_size = max(1, concurrency // 2)
    return {
        "batch_size": batch_size,
        # PgQueuer refuses a cap under 2 x batch_size: with C = 1 the worker holds 2 jobs
        "max_concurrent_tasks": max(concurrency, 2 * batch_size),
    }


def _config(concurrency: int) -> dict[str, Any]:
    return {
        "concurrency": concurrency,
        **_settings(concurrency),
        "driver": "AsyncpgDriver (one asyncpg connection)",
        "event_loop": "uvloop",
        "listen_notify": True,
        "dequeue_timeout_s": 30.0,
        "heartbeat_timeout_s": 30.0,
        "durability": "durable",
    }


async def _warm() -> None:
    """
    Load anyio's asyncio backend, which PgQueuer's dispatch first uses for its first job (a
    lazy import of ~45 ms that would otherwise land on the first job of every worker process).
    """
    await anyio.sleep(0)


class _ReadyQueries(Queries):
    """PgQueuer's `Queries`, saying `ready` on the worker's first dequeue: by then its LISTEN is on."""

    on_first_dequeue: Callable[[], None] | None = None

    async def dequeue(self, *args: Any, **kwargs: Any) -> Any:
        if self.on_first_dequeue is not None:
            say, self.on_first_dequeue = self.on_first_dequeue, None
            say()
        return await super().dequeue(*args, **kwargs)


async def setup(dsn: str) -> dict[str, Any]:
    async with _driver(dsn) as driver:
        queries = Queries(driver)
        await queries.install()
        await queries.optimize_autovacuum()
    return {"version": dist_version("pgqueuer")}


async def enqueue(dsn: str, jobs: int, first_id: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    async with _driver(dsn) as driver:
        queries = Queries(driver)
        for lo in range(first_id, first_id + jobs, ENQUEUE_CHUNK):
            ids = range(lo, min(lo + ENQUEUE_CHUNK, first_id + jobs))
            await queries.enqueue(
                [common.QUEUE] * len(ids),
                [_encode(common.payload(i)) for i in ids],
                [0] * len(ids),
            )
    return {"seconds": time.perf_counter() - t0, "config": {"jobs per enqueue call": ENQUEUE_CHUNK}}


async def work(dsn: str, concurrency: int, out: str) -> dict[str, Any]:
    rec = common.Recorder()

    @asynccontextmanager
    async def factory() -> AsyncIterator[QueueManager]:
        async with _driver(dsn) as driver:
            queries = _ReadyQueries(driver)
            queries.on_first_dequeue = rec.ready
            qm = QueueManager(queries)
            await _warm()

            @qm.entrypoint(common.QUEUE)
            async def noop(job: Job) -> None:
                start = time.time()
                assert job.payload is not None
                rec.add(json.loads(job.payload), start)

            yield qm

    # until SIGTERM: PgQueuer's handler stops dequeuing, lets jobs in flight finish, flushes
    await pgqueuer.run(factory, **_settings(concurrency))
    rec.dump(out, _config(concurrency))
    return {}


async def produce(dsn: str, rate: float, seconds: float, first_id: int) -> dict[str, Any]:
    async with _driver(dsn) as driver:
        queries = Queries(driver)
        await queries.enqueue([], [], [])  # warm: prepares the enqueue statement, enqueues nothing

        async def send(body: dict[str, Any]) -> None:
            await queries.enqueue(common.QUEUE, _encode(body))

        result: dict[str, Any] = await common.open_loop_async(rate, seconds, first_id, send)
    return result


async def completions(dsn: str) -> dict[str, Any]:
    async with _driver(dsn) as driver:
        # still in the queue (queued, picked, held as failed), or gone without success: a job
        # that failed for good is deleted from it (on_failure "delete") and logged 'exception'
        rows = await driver.fetch(
            "select (select count(*) from pgqueuer where entrypoint = $1)"
            " + (select count(distinct job_id) from pgqueuer_log where entrypoint = $1"
            "    and status in ('exception', 'canceled', 'deleted')) as n",
            common.QUEUE,
        )
    pending = rows[0]["n"]
    assert isinstance(pending, int)
    return {
        "pending": pending,
        "completed_at": None,
        "source": "none: PgQueuer deletes a finished job with its payload; pgqueuer_log keeps a"
        " 'successful' row with its time, but keyed by PgQueuer's own job id only, not the bench id",
    }


async def fanout(dsn: str, children: int, concurrency: int, out: str) -> dict[str, Any]:
    rec = common.Recorder()
    ready = asyncio.Event()
    finished = asyncio.Event()
    shutdown = asyncio.Event()
    continuations = 0
    seconds: list[float] = []

    @asynccontextmanager
    async def factory() -> AsyncIterator[QueueManager]:
        async with _driver(dsn) as driver, _driver(dsn) as side_driver:
            queries = _ReadyQueries(driver)
            queries.on_first_dequeue = ready.set
            qm = QueueManager(queries)
            await _warm()
            side_queries = Queries(side_driver)  # the parent's own connection: enqueue + watch

            @qm.entrypoint(common.QUEUE)
            async def noop(job: Job) -> None:
                start = time.time()
                assert job.payload is not None
                rec.add(json.loads(job.payload), start)

            @qm.entrypoint(PARENT)
            async def parent(job: Job) -> None:
                nonlocal continuations
                try:
                    ids = await side_queries.enqueue(
                        [common.QUEUE] * children,
                        [_encode(common.payload(i)) for i in range(children)],
                        [0] * children,
                    )
                    async with CompletionWatcher(side_driver, queries=side_queries) as watcher:
                        statuses = await asyncio.gather(*(watcher.wait_for(i) for i in ids))
                    # the continuation: runs once every child has reached a final status
                    assert all(s == "successful" for s in statuses), set(statuses)
                    continuations += 1
                finally:
                    finished.set()

            yield qm

    async def drive() -> None:
        await ready.wait()
        async with _driver(dsn) as driver:
            queries = Queries(driver)
            t0 = time.perf_counter()
            await queries.enqueue(PARENT, None)
            await finished.wait()
            seconds.append(time.perf_counter() - t0)
        await asyncio.sleep(0.5)  # a second continuation would show up here
        shutdown.set()

    driver_task = asyncio.create_task(drive())
    await pgqueuer.run(factory, shutdown=shutdown, **_settings(concurrency))
    await driver_task
    config = {**_config(concurrency), "fanout": "parent job awaiting its children with CompletionWatcher"}
    rec.dump(out, config, seconds=seconds[0] if seconds else None, continuations=continuations)
    return {}


if __name__ == "__main__":
    uvloop.run(common.main_async(globals()))
