"""
bench/peers adapter for Absurd, Python SDK absurd-sdk==0.5.1 (protocol: bench/peers/PROTOCOL.md).

A job is an Absurd task `noop` spawned on the queue `noop` (tables absurd.t_noop / r_noop / …); a
`work` process runs the SDK's worker loop on it. Recommended settings used, with their sources
(github.com/earendil-works/absurd: docs/database.md, docs/sdks/python.md):

- Schema: `absurdctl init` applies absurd.sql, "for local development or simple deployments"
  (docs/database.md). The SDK wheel ships no SQL; the absurdctl wheel (PyPI absurdctl==0.5.1, same
  release) bundles absurd.sql 0.5.1 and applies it with psql, so `setup` runs the absurdctl of this
  virtualenv and needs `psql` on PATH. The queues are then created with the SDK's `create_queue`
  (unpartitioned, the default).
- Worker: the synchronous `Absurd.start_worker(concurrency=C)`: a thread pool of C, claiming up to
  `batch_size` (default: C) tasks per `absurd.claim_task` call, only as slots free up, and sleeping
  `poll_interval` (default 0.25 s) only when a claim comes back empty; `claim_timeout` (the lease)
  stays at its default of 120 s. All of it over the client's single autocommit connection.
  `stop_worker()` is the documented graceful stop ("call app.stop_worker() from a signal handler"):
  the loop stops claiming, waits for the tasks in flight, which complete their runs, and returns.
- Enqueue: Absurd has no bulk spawn (one `absurd.spawn_task` per task), so `enqueue` spawns every
  job through a caller-owned connection inside one transaction; `produce` spawns one per call on
  an autocommit connection. Spawning a task not registered in the process names its queue.
- fanout: the parent task runs on its own queue `noop_fanout` (a task may only await tasks of
  another queue, TaskContext.await_task_result), spawns the N children on `noop` inside one step,
  awaits each with `ctx.await_task_result` (a checkpointed wait; the SDK polls the child's state
  with a 50 ms → 1 s backoff), then runs the continuation as a final step.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Callable
from importlib.metadata import version as _dist_version
from typing import Any

import common
import psycopg
from absurd_sdk import Absurd, TaskContext
from psycopg import sql

VERSION = _dist_version("absurd-sdk")
QUEUE = common.QUEUE
TASK = "noop"
PARENT_QUEUE = f"{QUEUE}_fanout"
PARENT_TASK = "fanout-parent"
POLL_INTERVAL_SEC = 0.25  # SDK default: the idle sleep of the worker loop
CLAIM_TIMEOUT_SEC = 120  # SDK default lease


def _config(concurrency: int) -> dict[str, Any]:
    return {
        "queue": QUEUE,
        "worker": "Absurd.start_worker (sync, thread pool, one connection)",
        "concurrency": concurrency,
        "batch_size": concurrency,
        "poll_interval": POLL_INTERVAL_SEC,
        "claim_timeout": CLAIM_TIMEOUT_SEC,
        "job": "task without steps",
    }


def setup(dsn: str) -> dict[str, Any]:
    absurdctl = os.path.join(sysconfig.get_path("scripts"), "absurdctl")
    subprocess.run([absurdctl, "init", "-d", dsn], check=True, stdout=sys.stderr)
    app = Absurd(dsn, queue_name=QUEUE)
    try:
        app.create_queue(QUEUE)
        app.create_queue(PARENT_QUEUE)
    finally:
        app.close()
    return {"version": VERSION}


def enqueue(dsn: str, jobs: int, first_id: int) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        app = Absurd(conn, queue_name=QUEUE)
        t0 = time.time()
        with conn.transaction():
            for job_id in range(first_id, first_id + jobs):
                app.spawn(TASK, common.payload(job_id), queue=QUEUE)
        seconds = time.time() - t0
    return {"seconds": seconds, "config": {"api": "Absurd.spawn per job, one transaction (no bulk spawn)"}}


def produce(dsn: str, rate: float, seconds: float, first_id: int) -> dict[str, Any]:
    app = Absurd(dsn, queue_name=QUEUE)
    try:
        return common.open_loop(rate, seconds, first_id, lambda body: app.spawn(TASK, body, queue=QUEUE))
    finally:
        app.close()


def _noop_worker(dsn: str, recorder: Any) -> Absurd:
    app = Absurd(dsn, queue_name=QUEUE)

    @app.register_task(TASK)
    def noop(params: dict[str, Any], ctx: TaskContext) -> None:
        recorder.add(params, time.time())

    return app


class _WorkerThread(threading.Thread):
    """Runs `app.start_worker(...)` and keeps what it raised, if anything."""

    def __init__(self, app: Absurd, queue: str, concurrency: int) -> None:
        super().__init__(name=f"absurd-worker-{queue}", daemon=True)
        self.app = app
        self.queue = queue
        self.concurrency = concurrency
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.app.start_worker(
                concurrency=self.concurrency, claim_timeout=CLAIM_TIMEOUT_SEC, poll_interval=POLL_INTERVAL_SEC
            )
        except BaseException as err:  # reported by stop()
            self.error = err

    def stop(self) -> None:
        """Graceful stop: no more claims, the tasks in flight finish and complete their runs."""
        # Repeated, since a stop_worker() before start_worker() has begun would be overwritten.
        while self.is_alive():
            self.app.stop_worker()
            self.join(0.05)
        self.app.close()
        if self.error is not None:
            raise RuntimeError(f"the Absurd worker of queue {self.queue} failed") from self.error


def work(dsn: str, concurrency: int, out: str) -> dict[str, Any]:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    recorder = common.Recorder()
    worker = _WorkerThread(_noop_worker(dsn, recorder), QUEUE, concurrency)
    worker.start()
    recorder.ready()
    while not stop.wait(0.2) and worker.is_alive():
        pass
    worker.stop()
    recorder.dump(out, _config(concurrency))
    return {}


def completions(dsn: str) -> dict[str, Any]:
    query = sql.SQL(
        "SELECT (t.params->>'id')::bigint, t.state, extract(epoch FROM r.completed_at)::float8"
        " FROM absurd.{tasks} t LEFT JOIN absurd.{runs} r ON r.run_id = t.last_attempt_run"
        " WHERE t.task_name = %s"
    ).format(tasks=sql.Identifier(f"t_{QUEUE}"), runs=sql.Identifier(f"r_{QUEUE}"))
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(query, (TASK,)).fetchall()
    done = {str(job_id): at for job_id, state, at in rows if state == "completed"}
    return {
        "pending": len(rows) - len(done),
        "completed_at": done,
        "source": f"absurd.r_{QUEUE}.completed_at (absurd.current_time() = server clock_timestamp()) of the"
        f" completed task's last run; job id from absurd.t_{QUEUE}.params",
    }


def fanout(dsn: str, children: int, concurrency: int, out: str) -> dict[str, Any]:
    recorder = common.Recorder()
    continuation_ends: list[float] = []
    parent_app = Absurd(dsn, queue_name=PARENT_QUEUE)

    def spawn_children(n: int) -> Callable[[], list[str]]:
        return lambda: [
            str(parent_app.spawn(TASK, common.payload(i), queue=QUEUE)["task_id"]) for i in range(n)
        ]

    def continuation() -> float:
        continuation_ends.append(time.time())
        return continuation_ends[-1]

    @parent_app.register_task(PARENT_TASK)
    def parent(params: dict[str, Any], ctx: TaskContext) -> None:
        for task_id in ctx.step("spawn-children", spawn_children(params["children"])):
            ctx.await_task_result(task_id, queue_name=QUEUE)
        ctx.step("continuation", continuation)

    workers = [
        _WorkerThread(_noop_worker(dsn, recorder), QUEUE, concurrency),
        _WorkerThread(parent_app, PARENT_QUEUE, 1),
    ]
    for worker in workers:
        worker.start()
    control = Absurd(dsn, queue_name=PARENT_QUEUE)
    try:
        t0 = time.time()
        spawned = control.spawn(PARENT_TASK, {"children": children}, queue=PARENT_QUEUE)
        # Only to know when to stop: the time measured is the continuation's own end.
        final = control.await_task_result(str(spawned["task_id"]), timeout=3600)
    finally:
        control.close()
        for worker in workers:
            worker.stop()
    if final.state != "completed":
        raise RuntimeError(f"the fanout parent ended {final.state}: {final.failure}")
    config = _config(concurrency) | {
        "fanout": f"parent task on queue {PARENT_QUEUE}: spawns children in a step, ctx.await_task_result"
        " on each, then a final step"
    }
    recorder.dump(out, config, seconds=continuation_ends[-1] - t0, continuations=len(continuation_ends))
    return {}


if __name__ == "__main__":
    common.main(globals())
