"""
Submit benchmark (issue 18): the enqueue path, @v0.3.0 beside HEAD in one cluster, same moment.
Prints one JSON document; not a test.

One throwaway cluster (fsync and synchronous_commit on, pg_stat_statements loaded,
track_functions = pl); database `v030` deployed to the tag @v0.3.0, database `head` to HEAD. For
each, alternating so both see the same load:

- submit_run server time per call: N calls, one statement each from the client, with no options
  and with typical options (priority, max_attempts, idempotency_key); the figure is
  pg_stat_user_functions.total_time / calls of submit_run (the function's own server time, no
  client round trip), and the share of it spent in _check_options;
- bulk enqueue jobs/s, as a client enqueues N jobs ({"id": i, "enq": null}, recipe noop) in calls
  of 1,000: @v0.3.0 by submit_run per row in one statement per 1,000 (its bulk path, the old peers
  adapter), HEAD by submit_runs (db.submit_many), and HEAD's submit_run per row for comparison.

Usage: python bench/submit_bench.py [--quick] [--calls N] [--jobs N]
A full run (2,000 calls, 20,000 jobs per system) takes about 3 minutes on 2 loaded cores; --quick
(500 calls, 5,000 jobs) under a minute.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from typing import Any

import psycopg
from benchlib import throwaway_cluster
from psycopg.types.json import Jsonb

from pgflight import db, migrate

CHUNK = 1_000
TYPICAL = {"priority": 1, "max_attempts": 5}


def _function_ms(c: psycopg.Connection[Any], name: str) -> tuple[int, float]:
    c.execute("select pg_stat_clear_snapshot()")
    row = c.execute(
        "select coalesce(sum(calls), 0), coalesce(sum(total_time), 0) from pg_stat_user_functions"
        " where schemaname = 'pgflight' and funcname = %s",
        [name],
    ).fetchone()
    assert row is not None
    return int(row[0]), float(row[1])


def per_call(dsn: str, calls: int, options: dict[str, Any] | None, tag: str) -> dict[str, float]:
    """submit_run's server time per call (ms) and _check_options' share, from pg_stat_user_functions."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select pg_stat_reset()")
        t0 = time.perf_counter()
        for i in range(calls):
            opts = dict(options, idempotency_key=f"{tag}-{i}") if options is not None else {}
            c.execute("select pgflight.submit_run('bench', 'noop', %s, %s)", [Jsonb({"id": i}), Jsonb(opts)])
        wall = time.perf_counter() - t0
        time.sleep(0.7)  # a backend reports its function counters when idle, at most once a second
        n, total = _function_ms(c, "submit_run")
        _, check = _function_ms(c, "_check_options")
    return {
        "server_ms_per_call": round(total / max(n, 1), 4),
        "check_options_share": round(check / total, 3) if total else 0.0,
        "client_calls_per_s": round(calls / wall),
    }


def enqueue_rows(dsn: str, jobs: int, first: int) -> float:
    """submit_run per row, one statement per CHUNK (the bulk path before submit_runs); jobs/s."""
    with psycopg.connect(dsn, autocommit=True) as c:
        t0 = time.perf_counter()
        for lo in range(first, first + jobs, CHUNK):
            c.execute(
                "select count(*) from generate_series(%s::bigint, %s) g,"
                " pgflight.submit_run('bench', 'noop', jsonb_build_object('id', g, 'enq', null))",
                [lo, min(lo + CHUNK, first + jobs) - 1],
            )
        return jobs / (time.perf_counter() - t0)


def enqueue_bulk(dsn: str, jobs: int, first: int) -> float:
    """submit_runs through the Python client (db.submit_many), CHUNK runs per call; jobs/s."""
    with psycopg.connect(dsn, autocommit=True) as c:
        t0 = time.perf_counter()
        for lo in range(first, first + jobs, CHUNK):
            hi = min(lo + CHUNK, first + jobs)
            runs = [{"recipe": "noop", "input": {"id": i, "enq": None}} for i in range(lo, hi)]
            db.submit_many(c, "bench", runs)
        return jobs / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--quick", action="store_true", help="500 calls, 5,000 jobs")
    ap.add_argument("--calls", type=int, default=2_000)
    ap.add_argument("--jobs", type=int, default=20_000)
    args = ap.parse_args()
    calls, jobs = (500, 5_000) if args.quick else (args.calls, args.jobs)
    settings = {"shared_preload_libraries": "pg_stat_statements", "track_functions": "pl"}
    out: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "load_average_before": os.getloadavg(),
        "calls": calls,
        "jobs": jobs,
    }
    with throwaway_cluster("head", settings) as (cluster, head):
        cluster.create_database("v030")
        old = cluster.dsn("v030")
        migrate.deploy(old, to="@v0.3.0", verify=False)
        with psycopg.connect(old, autocommit=True) as c:
            c.execute("select pgflight.create_workspace('bench')")
        dbs = {"v0.3.0": old, "HEAD": head}
        for name, dsn in dbs.items():  # warm: plans and caches
            per_call(dsn, 50, TYPICAL, f"warm-{name}")
        for label, options in (("no options", None), ("priority, max_attempts, idempotency_key", TYPICAL)):
            for name, dsn in dbs.items():
                figures = per_call(dsn, calls, options, label)
                out.setdefault("submit_run", {}).setdefault(label, {})[name] = figures
        enq: dict[str, float] = {}
        for rnd in range(2):  # alternate, twice, so load drift hits both
            first = 1_000_000 * (rnd + 1)
            enq.setdefault("v0.3.0 submit_run per row", 0)
            enq["v0.3.0 submit_run per row"] += enqueue_rows(old, jobs // 2, first) / 2
            enq.setdefault("HEAD submit_run per row", 0)
            enq["HEAD submit_run per row"] += enqueue_rows(head, jobs // 2, first) / 2
            enq.setdefault("HEAD submit_runs (db.submit_many)", 0)
            enq["HEAD submit_runs (db.submit_many)"] += enqueue_bulk(head, jobs // 2, first + 500_000) / 2
        out["enqueue_jobs_per_s"] = {k: round(v) for k, v in enq.items()}
    out["load_average_after"] = os.getloadavg()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
