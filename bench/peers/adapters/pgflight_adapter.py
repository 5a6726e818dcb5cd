#!/usr/bin/env python3
"""
pgflight's adapter for bench/peers (protocol: bench/peers/PROTOCOL.md). Runs with pgflight's own
virtualenv (.venv at the repository root) and drives the real Python worker, as a user would:

- enqueue: `pgflight.db.submit_many` (SQL `submit_runs`, the bulk submit), one call per 10,000
  jobs, payloads sent by the client as Graphile's adapter does with addJobs (a run per job, root
  step recipe `noop`);
- work: `pgflight.worker.Worker(concurrency=C, batch_size=C)`: one `claim_batch` per free batch,
  claimed straight into running, LISTEN for wake-ups, completions sent together by
  `complete_batch`, claims coalesced into whole batches while a backlog lasts (claim_coalesce_s,
  5 ms) (the worker's defaults apart from batch size = concurrency, the setting
  docs/benchmarks.md uses for throughput);
- fanout: a parent recipe calls `ctx.spawn` with N children (one `spawn_children` call), parks,
  and runs again once when the last child's completion wakes it: that second run is the
  continuation;
- completions: `step_attempts.finished_at` of each job's succeeded attempt (clock_timestamp() of
  the completing call).
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "python_worker"))

import common
import psycopg
from psycopg.types.json import Jsonb

from pgflight import db, migrate
from pgflight.recipes import Registry, StepContext
from pgflight.worker import Worker

WORKSPACE = "bench"
SUBMIT_CHUNK = 10_000  # as Graphile's adapter (ADD_CHUNK)


def version() -> str:
    from importlib.metadata import version as v

    return v("pgflight")


def setup(dsn: str) -> dict[str, Any]:
    migrate.deploy(dsn, verify=False)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select pgflight.create_workspace(%s)", [WORKSPACE])
    return {"version": version()}


def enqueue(dsn: str, jobs: int, first_id: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as c:
        for lo in range(first_id, first_id + jobs, SUBMIT_CHUNK):
            hi = min(lo + SUBMIT_CHUNK, first_id + jobs)
            db.submit_many(
                c, WORKSPACE, [{"recipe": common.QUEUE, "input": common.payload(i)} for i in range(lo, hi)]
            )
    return {
        "seconds": time.perf_counter() - t0,
        "config": {"api": "db.submit_many (submit_runs)", "chunk": SUBMIT_CHUNK},
    }


def _worker(dsn: str, concurrency: int, registry: Registry, rec: Any) -> Worker:
    worker = Worker(dsn, registry, concurrency=concurrency, batch_size=concurrency, lease_s=30)
    threading.Thread(target=lambda: (_registered(worker), rec.ready()), daemon=True).start()
    return worker


def _registered(worker: Worker) -> None:
    """Wait until the worker has registered (it then claims)."""
    while worker.worker_id is None:
        time.sleep(0.01)


def _config(worker: Worker) -> dict[str, Any]:
    return {
        "concurrency": worker.concurrency,
        "batch_size": worker.batch_size,
        "claim_coalesce_s": worker.claim_coalesce_s,
        "lease_s": worker.lease_s,
        "listen": worker.listen,
        "poll_s": worker.poll_s,
    }


def work(dsn: str, concurrency: int, out: str) -> dict[str, Any]:
    rec = common.Recorder()
    registry = Registry()

    def noop(ctx: StepContext) -> None:
        start = time.time()
        rec.add(ctx.input, start)

    registry.add(common.QUEUE, noop)
    worker = _worker(dsn, concurrency, registry, rec)
    worker.run()  # until SIGTERM: no more claims, running steps finish, completions go out
    rec.dump(out, _config(worker))
    return {}


def produce(dsn: str, rate: float, seconds: float, first_id: int) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select pgflight.create_workspace(%s)", [WORKSPACE])  # warm: first call plans
        return dict(
            common.open_loop(
                rate,
                seconds,
                first_id,
                lambda body: c.execute(
                    "select pgflight.submit_run(%s, %s, %s)",
                    [WORKSPACE, common.QUEUE, Jsonb(body)],
                ),
            )
        )


def completions(dsn: str) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as c:
        pending = c.execute(
            "select count(*) from pgflight.steps s where s.recipe = %s and not exists"
            " (select from pgflight.step_attempts a where a.step_id = s.id and a.status = 'succeeded')",
            [common.QUEUE],
        ).fetchone()
        rows = c.execute(
            "select (s.input->>'id')::bigint, extract(epoch from a.finished_at)::float8"
            " from pgflight.steps s join pgflight.step_attempts a on a.step_id = s.id"
            " where s.recipe = %s and a.status = 'succeeded'",
            [common.QUEUE],
        ).fetchall()
    assert pending is not None
    return {
        "pending": int(pending[0]),
        "completed_at": {str(i): t for i, t in rows},
        "source": "pgflight.step_attempts.finished_at of the succeeded attempt",
    }


def fanout(dsn: str, children: int, concurrency: int, out: str) -> dict[str, Any]:
    rec = common.Recorder()
    registry = Registry()
    continuations = 0
    finished = threading.Event()

    def child(ctx: StepContext) -> None:
        rec.add(ctx.input, time.time())

    def parent(ctx: StepContext) -> dict[str, int]:
        nonlocal continuations
        ctx.spawn(
            [{"key": f"{i:07d}", "recipe": common.QUEUE, "input": common.payload(i)} for i in range(children)]
        )  # parks the first time; returns once all children are done
        continuations += 1
        finished.set()
        return {"children": children}

    registry.add(common.QUEUE, child)
    registry.add("parent", parent)
    worker = _worker(dsn, concurrency, registry, rec)
    done_at: list[float] = []

    def drive() -> None:
        _registered(worker)
        t0 = time.perf_counter()
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("select pgflight.submit_run(%s, 'parent', '{}'::jsonb)", [WORKSPACE])
        finished.wait()
        done_at.append(time.perf_counter() - t0)
        time.sleep(0.5)  # a second continuation would show up here
        worker.stop()

    threading.Thread(target=drive, daemon=True).start()
    worker.run()
    rec.dump(out, _config(worker), seconds=done_at[0] if done_at else None, continuations=continuations)
    return {}


if __name__ == "__main__":
    common.main(globals())
