"""
bench/peers adapter for DBOS Transact for Python, dbos==3.4.0 (protocol: bench/peers/PROTOCOL.md).

A job is a DBOS workflow `noop` (no step: its status row is its whole durable record) enqueued on
the database-backed DBOS queue `noop`; `work` processes are DBOS executors dequeuing from it.
Recommended settings used, with their sources:

- Everything lives in the database given by --dsn: DBOS 3 has no application database, only a
  system database (`system_database_url`), whose tables go to the schema `dbos` of that same
  database (DBOSConfig docstring, dbos/_dbos_config.py; docs.dbos.dev/python/reference/configuration).
- Queues are persisted in the system database: `DBOS.register_queue` / `DBOSClient.register_queue`
  (docs.dbos.dev/python/reference/queues). `setup` creates the queue with `DBOS.migrate` +
  `DBOSClient.register_queue`; `work` sets `worker_concurrency=C` (the per-process limit, "worker
  concurrency is recommended for most use cases", queue tutorial) before launching.
- `worker_concurrency` needs a unique `executor_id` per process ("if those are not used it must be
  set to a unique value for each process through configuration", queues reference); it also keeps
  one executor's launch-time recovery off another's in-flight workflows. All processes share one
  `application_version`, so every executor dequeues every workflow (the enqueue options name it).
- `polling_interval_sec` (default 1.0 s) bounds the dequeue rate: each poll claims at most
  `worker_concurrency` minus what is running, so one executor starts at most C workflows per
  interval. "Smaller values reduce dequeue latency at the cost of more database load"
  (DBOSClient.register_queue docstring; made configurable for this in dbos-transact-py #515/#518).
  We use POLLING_INTERVAL_SEC below; the same value is passed to `get_result` in `fanout`.
  (2-core dev box, 2 executors with C = 8, 1,500 no-op jobs: 1.0 s → 15 jobs/s, 0.1 s → 114,
  0.05 s → ~170, 0.01 s → 235, where the CPU becomes the limit.)
- Enqueueing from processes that run no workflows: `DBOSClient` (docs.dbos.dev/python/reference/
  client). DBOS has no bulk enqueue, so `enqueue` writes all jobs in one transaction with
  `DBOSClient.enqueue_in_transaction`; `produce` calls `DBOSClient.enqueue` once per job.
- Workflow ids are `noop-<job id>` (DBOS's idempotency key), so `completions` can name the job
  without unpickling the inputs (the default serializer stores them as base64 pickle).
- Graceful stop: `DBOS.destroy(workflow_completion_timeout_sec=...)` stops the queue threads, then
  waits for the workflows in flight to finish (it checks once a second) before shutting down.
- fanout: a parent workflow enqueues N child workflows on the queue (`DBOS.enqueue_workflow`, each
  child's handle durably recorded) and waits on their handles (`get_result`); the continuation is
  a `@DBOS.step` after the waits, so it runs once (docs.dbos.dev/python/tutorials/queue-tutorial).
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from importlib.metadata import version as _dist_version
from typing import Any

import common
import sqlalchemy as sa
from dbos import DBOS, DBOSClient, DBOSConfig, EnqueueOptions

VERSION = _dist_version("dbos")
APP_NAME = "bench-peers"  # owner of the queue; DBOS executors only dequeue their application's queues
APP_VERSION = "bench"  # one version for all processes, so all of them dequeue every workflow
SCHEMA = "dbos"  # DBOS's default system schema
QUEUE = common.QUEUE
WORKFLOW = "noop"
POLLING_INTERVAL_SEC = 0.05  # queue polling and get_result polling (DBOS default 1.0)
SHUTDOWN_TIMEOUT_SEC = 60  # DBOS.destroy: longest wait for workflows in flight


def _config(concurrency: int) -> dict[str, Any]:
    return {
        "system_database": f"same database, schema {SCHEMA}",
        "queue": QUEUE,
        "worker_concurrency": concurrency,
        "polling_interval_sec": POLLING_INTERVAL_SEC,
        "executor_id": "bench-<host>-<pid> (unique per process)",
        "application_version": APP_VERSION,
        "job": "workflow without steps",
    }


def _client(dsn: str) -> DBOSClient:
    return DBOSClient(system_database_url=dsn, application_name=APP_NAME)


def _enqueue_options(job_id: int) -> EnqueueOptions:
    return {
        "queue_name": QUEUE,
        "workflow_name": WORKFLOW,
        "workflow_id": f"{WORKFLOW}-{job_id}",
        "app_version": APP_VERSION,
    }


def _register_queue(dsn: str, worker_concurrency: int | None) -> None:
    """Create or update the queue's persisted configuration (before DBOS.launch, so the first poll
    already obeys it)."""
    client = _client(dsn)
    try:
        client.register_queue(
            QUEUE,
            worker_concurrency=worker_concurrency,
            polling_interval_sec=POLLING_INTERVAL_SEC,
            on_conflict="always_update",
            application_name=APP_NAME,
        )
    finally:
        client.destroy()


def _launch(dsn: str) -> None:
    config: DBOSConfig = {
        "name": APP_NAME,
        "system_database_url": dsn,
        "dbos_system_schema": SCHEMA,
        "application_version": APP_VERSION,
        "executor_id": f"bench-{socket.gethostname()}-{os.getpid()}",
        "log_level": "WARNING",
    }
    DBOS(config=config)
    DBOS.launch()


def setup(dsn: str) -> dict[str, Any]:
    DBOS.migrate(dsn, schema=SCHEMA)
    _register_queue(dsn, worker_concurrency=None)
    return {"version": VERSION}


def enqueue(dsn: str, jobs: int, first_id: int) -> dict[str, Any]:
    client = _client(dsn)
    engine = sa.create_engine(sa.make_url(dsn).set(drivername="postgresql+psycopg"))
    try:
        t0 = time.time()
        with engine.begin() as conn:
            for job_id in range(first_id, first_id + jobs):
                client.enqueue_in_transaction(conn, _enqueue_options(job_id), common.payload(job_id))
        seconds = time.time() - t0
    finally:
        engine.dispose()
        client.destroy()
    return {"seconds": seconds, "config": {"api": "DBOSClient.enqueue_in_transaction, one transaction"}}


def produce(dsn: str, rate: float, seconds: float, first_id: int) -> dict[str, Any]:
    client = _client(dsn)
    try:
        return common.open_loop(
            rate, seconds, first_id, lambda body: client.enqueue(_enqueue_options(body["id"]), body)
        )
    finally:
        client.destroy()


def _register_noop(recorder: Any) -> Any:
    @DBOS.workflow(name=WORKFLOW)
    def noop(body: dict[str, Any]) -> None:
        recorder.add(body, time.time())

    return noop


def work(dsn: str, concurrency: int, out: str) -> dict[str, Any]:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    recorder = common.Recorder()
    _register_noop(recorder)
    _register_queue(dsn, worker_concurrency=concurrency)
    _launch(dsn)
    recorder.ready()
    while not stop.wait(0.2):
        pass
    # Stops dequeuing, then waits until the workflows in flight have recorded their outcome.
    DBOS.destroy(workflow_completion_timeout_sec=SHUTDOWN_TIMEOUT_SEC)
    recorder.dump(out, _config(concurrency))
    return {}


def completions(dsn: str) -> dict[str, Any]:
    engine = sa.create_engine(sa.make_url(dsn).set(drivername="postgresql+psycopg"))
    prefix = f"{WORKFLOW}-"
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text(
                    f"SELECT workflow_uuid, status, completed_at FROM {SCHEMA}.workflow_status"
                    " WHERE name = :name AND starts_with(workflow_uuid, :prefix)"
                ),
                {"name": WORKFLOW, "prefix": prefix},
            ).all()
    finally:
        engine.dispose()
    done = {r.workflow_uuid[len(prefix) :]: r.completed_at / 1000.0 for r in rows if r.status == "SUCCESS"}
    return {
        "pending": len(rows) - len(done),
        "completed_at": done,
        "source": f"{SCHEMA}.workflow_status.completed_at (epoch ms, server clock) of SUCCESS rows;"
        f" job id from workflow_uuid '{prefix}<id>'",
    }


def fanout(dsn: str, children: int, concurrency: int, out: str) -> dict[str, Any]:
    recorder = common.Recorder()
    noop = _register_noop(recorder)
    continuation_ends: list[float] = []

    @DBOS.step(name="fanout_continuation")
    def continuation() -> None:
        continuation_ends.append(time.time())

    @DBOS.workflow(name="fanout_parent")
    def parent(n: int) -> None:
        handles = [DBOS.enqueue_workflow(QUEUE, noop, common.payload(i)) for i in range(n)]
        for handle in handles:
            handle.get_result(polling_interval_sec=POLLING_INTERVAL_SEC)
        continuation()

    _register_queue(dsn, worker_concurrency=concurrency)
    _launch(dsn)
    t0 = time.time()
    DBOS.start_workflow(parent, children).get_result(polling_interval_sec=POLLING_INTERVAL_SEC)
    DBOS.destroy(workflow_completion_timeout_sec=SHUTDOWN_TIMEOUT_SEC)
    config = _config(concurrency) | {
        "fanout": "parent workflow enqueues children on the queue, get_result on each handle, then a step"
    }
    recorder.dump(out, config, seconds=continuation_ends[-1] - t0, continuations=len(continuation_ends))
    return {}


if __name__ == "__main__":
    common.main(globals())
