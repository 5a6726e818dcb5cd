#!/usr/bin/env python3
"""
End-to-end no-op steps/s through the Python worker (1 and 4 worker processes), beside this
machine's single-row commit ceiling measured in the same run, and a worker's resident memory
idle and after many steps. Prints one JSON document.

    .venv/bin/python bench/worker_bench.py [--steps 20000] [--memory-steps 100000] [--memory-s 120]

Server: PGFLIGHT_BENCH_DSN (a superuser DSN; a database is created and dropped), else a throwaway
cluster in a temporary folder with the test settings (fsync=off, synchronous_commit=off) unless
--durable. Each worker: ``pgflight worker --recipes pgflight_demo --concurrency 16 --batch-size 16``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python_worker"))

from pgflight import migrate  # noqa: E402
from pgflight.embedded import Cluster  # noqa: E402

FAST = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off", "log_min_messages": "warning"}


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def commit_ceiling(dsn: str, seconds: float = 3.0) -> float:
    """Single-connection single-row insert commits per second."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(
            "create table if not exists public.bench_commit (id bigint generated always as identity, x int)"
        )
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            c.execute("insert into public.bench_commit (x) values (1)")
            n += 1
        c.execute("drop table public.bench_commit")
        return n / (time.perf_counter() - t0)


def start_workers(dsn: str, n: int, concurrency: int, *extra: str) -> list[subprocess.Popen[bytes]]:
    """n `pgflight worker` processes of pgflight_demo (batch = concurrency); `extra`: more CLI options."""
    env = dict(os.environ, PGFLIGHT_DSN=dsn)
    return [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pgflight.cli",
                "worker",
                "--recipes",
                "pgflight_demo",
                "--concurrency",
                str(concurrency),
                "--batch-size",
                str(concurrency),
                "--lease",
                "30",
                "--log-level",
                "WARNING",
                *extra,
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for _ in range(n)
    ]


def stop_workers(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def succeeded(c: psycopg.Connection[tuple[object, ...]]) -> int:
    row = c.execute("select count(*) from pgflight.step_attempts where status = 'succeeded'").fetchone()
    return int(row[0]) if row else 0


def reset_and_submit(c: psycopg.Connection[tuple[object, ...]], n: int) -> None:
    c.execute(
        "truncate pgflight.events, pgflight.effects, pgflight.approvals, pgflight.step_attempts,"
        " pgflight.steps, pgflight.runs cascade"
    )
    c.execute("select pgflight.create_workspace('bench')")
    for start in range(0, n, 50_000):
        c.execute(
            "select pgflight.submit_run('bench', 'noop', '{}'::jsonb) from generate_series(1, %s)",
            [min(50_000, n - start)],
        )
    c.execute("vacuum analyze pgflight.step_attempts")


def throughput(dsn: str, workers: int, steps: int, concurrency: int, max_s: float) -> dict[str, float]:
    with psycopg.connect(dsn, autocommit=True) as c:
        reset_and_submit(c, steps)
        procs = start_workers(dsn, workers, concurrency)
        try:
            # measure from the first completion, so process start-up is not counted
            while succeeded(c) == 0:
                time.sleep(0.01)
            t0, n0 = time.perf_counter(), succeeded(c)
            while (n := succeeded(c)) < steps and time.perf_counter() - t0 < max_s:
                time.sleep(0.1)
            dt = time.perf_counter() - t0
        finally:
            stop_workers(procs)
    return {
        "workers": workers,
        "concurrency_per_worker": concurrency,
        "steps": n - n0,
        "seconds": round(dt, 2),
        "steps_per_s": round((n - n0) / dt, 1),
    }


def memory(dsn: str, steps: int, max_s: float, concurrency: int) -> dict[str, float]:
    with psycopg.connect(dsn, autocommit=True) as c:
        reset_and_submit(c, 0)
        (p,) = start_workers(dsn, 1, concurrency)
        try:
            time.sleep(3)
            idle = rss_kib(p.pid)
            reset_and_submit(c, steps)
            c.execute("notify pgflight_ready")
            t0 = time.perf_counter()
            while (n := succeeded(c)) < steps and time.perf_counter() - t0 < max_s:
                time.sleep(0.5)
            after = rss_kib(p.pid)
            dt = time.perf_counter() - t0
        finally:
            stop_workers([p])
    return {
        "rss_idle_mib": round(idle / 1024, 1),
        "rss_after_mib": round(after / 1024, 1),
        "steps_done": n,
        "steps_asked": steps,
        "seconds": round(dt, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--max-s", type=float, default=40.0, help="cap per throughput phase, seconds")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--memory-steps", type=int, default=100_000)
    ap.add_argument("--memory-s", type=float, default=120.0)
    ap.add_argument("--durable", action="store_true", help="throwaway cluster with fsync on")
    args = ap.parse_args()

    external = os.environ.get("PGFLIGHT_BENCH_DSN")
    folder, cluster = None, None
    if external:
        admin = external
    else:
        folder = Path(tempfile.mkdtemp(prefix="pgflight-bench-"))
        os.chmod(folder, 0o755)
        cluster = Cluster(folder, settings={} if args.durable else FAST)
        cluster.up()
        admin = cluster.dsn("postgres")
    name = f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    dsn = make_conninfo(admin, dbname=name)
    try:
        migrate.deploy(dsn)
        ceiling = commit_ceiling(dsn)
        results = [throughput(dsn, w, args.steps, args.concurrency, args.max_s) for w in (1, 4)]
        for r in results:
            r["ratio_to_commit_ceiling"] = round(r["steps_per_s"] / ceiling, 3)
        mem = memory(dsn, args.memory_steps, args.memory_s, args.concurrency)
        print(
            json.dumps(
                {
                    "server": "PGFLIGHT_BENCH_DSN"
                    if external
                    else (
                        "throwaway, durable"
                        if args.durable
                        else "throwaway, fsync=off synchronous_commit=off"
                    ),
                    "cpus": os.cpu_count(),
                    "commit_ceiling_per_s": round(ceiling, 1),
                    "throughput": results,
                    "memory": mem,
                },
                indent=2,
            )
        )
    finally:
        with psycopg.connect(admin, autocommit=True) as c:
            c.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))
        if cluster is not None:
            cluster.destroy()
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
