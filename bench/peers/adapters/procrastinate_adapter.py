#!/usr/bin/env python3
"""
Procrastinate 3.10.0's adapter for bench/peers (protocol: bench/peers/PROTOCOL.md). Runs with the
peers' virtualenv (bench/peers/.venv) and uses Procrastinate's own API throughout, as its
documentation recommends (docs/howto/basics/worker.md, docs/howto/basics/batch_defer.md,
docs/howto/concurrency.md and the pool-size discussion in docs/discussions.md, in
procrastinate-org/procrastinate):

- connector: `PsycopgConnector` (psycopg 3 pool), the one the docs use throughout; pool of C + 1
  connections, opened up front: "the shorter your average job execution time, the more your
  pool will need to contain as many connections as your concurrency (plus one)"; the LISTEN
  connection is a separate one. Plain asyncio loop, as `procrastinate worker` runs;
- setup: `App.schema_manager.apply_schema_async()` (what `procrastinate schema --apply` runs);
- enqueue: `Task.batch_defer_async` (one `procrastinate_defer_jobs_v1` call for many jobs), 1,000
  jobs per call;
- work: `App.run_worker_async(queues=["noop"], concurrency=C)` with its signal handlers: SIGTERM
  stops fetching, waits for the jobs in flight (`shutdown_graceful_timeout` None: no abort), each
  job's status is written by `procrastinate_finish_job_v1`, the worker unregisters, then
  `run_worker_async` returns. Everything else is the default: LISTEN/NOTIFY on (new jobs wake the
  worker), `fetch_job_polling_interval` 5 s as the fallback poll, `delete_jobs` "never".
  Procrastinate fetches one job per `procrastinate_fetch_job_v2` call (it has no batch fetch) and
  finishes each one with its own call;
- fanout: unsupported, Procrastinate has no parent / child, group, chord or dependency mechanism;
- completions: the `at` of each job's `succeeded` row in `procrastinate_events` (written by the
  status trigger, now() of the finishing transaction), the bench id read from the job's args.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from importlib.metadata import version as dist_version
from typing import Any

import common
import procrastinate
from procrastinate import connector as connector_module

DEFER_CHUNK = 1_000


class _Connector(procrastinate.PsycopgConnector):
    """Procrastinate's psycopg connector, calling `on_listening` once its LISTEN is in place."""

    on_listening: Callable[[], None] | None = None

    async def _loop_notify(
        self,
        on_notification: connector_module.Notify,
        connection: Any,
        timeout: float = connector_module.LISTEN_TIMEOUT,
    ) -> None:
        if self.on_listening is not None:
            say, self.on_listening = self.on_listening, None
            say()
        await super()._loop_notify(on_notification=on_notification, connection=connection, timeout=timeout)


def _pool_size(concurrency: int) -> int:
    return concurrency + 1


OnJob = Callable[[dict[str, Any], float], None]


def _app(dsn: str, concurrency: int = 1, on_job: OnJob | None = None) -> procrastinate.App:
    """The app, with the `noop` task on the `noop` queue; `on_job(args, start)` records a run."""
    size = _pool_size(concurrency)
    app = procrastinate.App(connector=_Connector(conninfo=dsn, min_size=size, max_size=size))

    @app.task(name=common.QUEUE, queue=common.QUEUE)
    async def noop(**body: Any) -> None:
        start = time.time()
        if on_job is not None:
            on_job(body, start)

    return app


def _config(concurrency: int) -> dict[str, Any]:
    return {
        "concurrency": concurrency,
        "pool_size": _pool_size(concurrency),
        "connector": "PsycopgConnector (psycopg 3 pool)",
        "listen_notify": True,
        "fetch_job_polling_interval_s": 5.0,
        "jobs per fetch": 1,
        "delete_jobs": "never",
        "shutdown_graceful_timeout": None,
    }


async def setup(dsn: str) -> dict[str, Any]:
    app = _app(dsn)
    async with app.open_async():
        await app.schema_manager.apply_schema_async()
    return {"version": dist_version("procrastinate")}


async def enqueue(dsn: str, jobs: int, first_id: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    app = _app(dsn)
    async with app.open_async():
        task = app.tasks[common.QUEUE]
        for lo in range(first_id, first_id + jobs, DEFER_CHUNK):
            ids = range(lo, min(lo + DEFER_CHUNK, first_id + jobs))
            await task.batch_defer_async(*(common.payload(i) for i in ids))
    return {"seconds": time.perf_counter() - t0, "config": {"jobs per batch_defer_async call": DEFER_CHUNK}}


async def work(dsn: str, concurrency: int, out: str) -> dict[str, Any]:
    rec = common.Recorder()
    app = _app(dsn, concurrency, rec.add)
    assert isinstance(app.connector, _Connector)
    app.connector.on_listening = rec.ready
    async with app.open_async():
        # until SIGTERM: Procrastinate's handler stops fetching and waits for the jobs in flight
        await app.run_worker_async(queues=[common.QUEUE], concurrency=concurrency)
    rec.dump(out, _config(concurrency))
    return {}


async def produce(dsn: str, rate: float, seconds: float, first_id: int) -> dict[str, Any]:
    app = _app(dsn)
    async with app.open_async():
        task = app.tasks[common.QUEUE]

        async def send(body: dict[str, Any]) -> None:
            await task.defer_async(**body)

        result: dict[str, Any] = await common.open_loop_async(rate, seconds, first_id, send)
    return result


async def completions(dsn: str) -> dict[str, Any]:
    app = _app(dsn)
    async with app.open_async():
        connector = app.connector
        pending = await connector.execute_query_one_async(
            "select count(*) as n from procrastinate_jobs"
            " where task_name = %(task)s and status <> 'succeeded'",
            task=common.QUEUE,
        )
        rows = await connector.execute_query_all_async(
            "select (j.args->>'id')::bigint as id, extract(epoch from e.at)::float8 as at"
            " from procrastinate_jobs j join procrastinate_events e on e.job_id = j.id"
            " where j.task_name = %(task)s and e.type = 'succeeded'",
            task=common.QUEUE,
        )
    return {
        "pending": int(pending["n"]),
        "completed_at": {str(r["id"]): r["at"] for r in rows},
        "source": "procrastinate_events.at of the job's 'succeeded' event"
        " (now() of the transaction finishing it)",
    }


def fanout() -> dict[str, Any]:
    return {
        "unsupported": "Procrastinate has no parent/child, group, chord or dependency mechanism:"
        " a job cannot continue once after jobs it spawned are done without a polling loop of our own"
    }


if __name__ == "__main__":
    asyncio.run(common.main_async(globals()))
