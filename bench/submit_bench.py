"""
Submit benchmark: the enqueue path, a release tag or a git commit (`--before`, default @v0.6.0)
beside HEAD in one cluster, same moment. Prints one JSON document; not a test.

One throwaway cluster (fsync and synchronous_commit on, pg_stat_statements loaded,
track_functions = pl); a database deployed to the tag, database `head` to HEAD. For each,
alternating so both see the same load:

- submit_run server time per call: N calls, one statement each from the client, with no options
  and with typical options (priority, max_attempts, idempotency_key); the figure is
  pg_stat_user_functions.total_time / calls of submit_run (the function's own server time, no
  client round trip), and the share of it spent in _check_options;
- bulk enqueue as bench/peers enqueues (`db.submit_many`, SQL submit_runs, `--chunk` runs per call,
  10,000 by default; no-op payloads {"id": i, "enq": null}), in alternating rounds, each on a
  connection of its own that has made one call already (plans and caches warm): per system the
  median over rounds of jobs/s (wall time of the calls), of the backend's CPU time per call
  (/proc of the server process), of the client's CPU time per call (this process) and WAL bytes
  per job. Both use HEAD's client; the tag's client validated each row on its own
  (`client_per_row_validation_ms`: what that costs per call here).

Usage: python bench/submit_bench.py [--quick] [--before @v0.6.0] [--calls N] [--rounds N] [--chunk N]
A full run (2,000 calls, 7 rounds of 10,000 jobs per system) takes about 2 minutes on 2 loaded
cores; --quick (300 calls, 3 rounds) under a minute.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from typing import Any

import psycopg
from benchlib import deploy_ref, process_cpu_s, throwaway_cluster
from psycopg.types.json import Jsonb

from pgflight import db, models

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


def _wal_lsn(c: psycopg.Connection[Any]) -> int:
    row = c.execute("select pg_current_wal_insert_lsn() - '0/0'").fetchone()
    assert row is not None
    return int(row[0])


def _runs(lo: int, n: int) -> list[dict[str, Any]]:
    return [{"recipe": "noop", "input": {"id": i, "enq": None}} for i in range(lo, lo + n)]


class Enqueuer:
    """One connection of one system, warmed by a first call; `call` submits a chunk and measures it."""

    def __init__(self, dsn: str, chunk: int) -> None:
        self.conn = psycopg.connect(dsn, autocommit=True)
        row = self.conn.execute("select pg_backend_pid()").fetchone()
        assert row is not None
        self.pid = int(row[0])
        self.chunk = chunk
        self.next_id = 1
        self.call()  # warm: the function compiled, its statements planned, the catalog cached

    def call(self) -> dict[str, float]:
        runs = _runs(self.next_id, self.chunk)
        self.next_id += self.chunk
        wal0, cpu0 = _wal_lsn(self.conn), process_cpu_s(self.pid)
        t0, c0 = time.perf_counter(), time.process_time()
        got = db.submit_many(self.conn, "bench", runs)
        wall, client = time.perf_counter() - t0, time.process_time() - c0
        cpu, wal = process_cpu_s(self.pid) - cpu0, _wal_lsn(self.conn) - wal0
        assert len(got) == self.chunk and all(r.created for r in got)
        return {"wall_s": wall, "server_cpu_s": cpu, "client_cpu_s": client, "wal_bytes": wal}

    def close(self) -> None:
        self.conn.close()


def enqueue_rounds(dsns: dict[str, str], rounds: int, chunk: int) -> dict[str, dict[str, Any]]:
    """Alternating rounds of one chunk per system; medians per system."""
    sides = {name: Enqueuer(dsn, chunk) for name, dsn in dsns.items()}
    got: dict[str, list[dict[str, float]]] = {name: [] for name in dsns}
    try:
        for rnd in range(rounds):
            order = list(sides.items()) if rnd % 2 == 0 else list(reversed(sides.items()))
            for name, side in order:
                got[name].append(side.call())
    finally:
        for side in sides.values():
            side.close()
    out: dict[str, dict[str, Any]] = {}
    for name, rows in got.items():
        med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        out[name] = {
            "jobs_per_s": round(chunk / med["wall_s"]),
            "jobs_per_s_range": [
                round(chunk / max(r["wall_s"] for r in rows)),
                round(chunk / min(r["wall_s"] for r in rows)),
            ],
            "server_cpu_ms_per_call": round(1e3 * med["server_cpu_s"], 1),
            "client_cpu_ms_per_call": round(1e3 * med["client_cpu_s"], 1),
            "wal_bytes_per_job": round(med["wal_bytes"] / chunk),
        }
    return out


def per_row_validation_ms(chunk: int) -> float:
    """Client CPU of validating `chunk` result rows one model_validate each (the tag's client)."""
    rows = [{"idx": i, "run_id": i, "step_id": i, "attempt_id": i, "created": True} for i in range(chunk)]
    c0 = time.process_time()
    for r in rows:
        models.SubmittedRunItem.model_validate(r)
    return round(1e3 * (time.process_time() - c0), 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--quick", action="store_true", help="300 calls, 3 rounds")
    ap.add_argument(
        "--before",
        default="@v0.6.0",
        help="the tag, or a git commit or branch, beside HEAD (default @v0.6.0)",
    )
    ap.add_argument("--calls", type=int, default=2_000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument(
        "--chunk", type=int, default=10_000, help="runs per submit_runs call (bench/peers: 10,000)"
    )
    args = ap.parse_args()
    calls, rounds = (300, 3) if args.quick else (args.calls, args.rounds)
    settings = {"shared_preload_libraries": "pg_stat_statements", "track_functions": "pl"}
    out: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "load_average_before": os.getloadavg(),
        "before": args.before,
        "calls": calls,
        "rounds": rounds,
        "chunk": args.chunk,
    }
    with throwaway_cluster("head", settings) as (cluster, head):
        old = deploy_ref(cluster, args.before)
        dbs = {args.before: old, "HEAD": head}
        for name, dsn in dbs.items():  # warm: plans and caches
            per_call(dsn, 50, TYPICAL, f"warm-{name}")
        for label, options in (("no options", None), ("priority, max_attempts, idempotency_key", TYPICAL)):
            for name, dsn in dbs.items():
                figures = per_call(dsn, calls, options, label)
                out.setdefault("submit_run", {}).setdefault(label, {})[name] = figures
        out["enqueue_submit_many"] = enqueue_rounds(dbs, rounds, args.chunk)
        base, now = out["enqueue_submit_many"][args.before], out["enqueue_submit_many"]["HEAD"]
        out["enqueue_head_over_before"] = {
            k: round(now[k] / base[k], 3) for k in base if isinstance(base[k], (int, float)) and base[k]
        }
        out["client_per_row_validation_ms"] = per_row_validation_ms(args.chunk)
    out["load_average_after"] = os.getloadavg()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
