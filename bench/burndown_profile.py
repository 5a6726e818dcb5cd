"""
Where a burn-down's CPU goes, server and worker (issue 18). Prints its figures; not a test.

On a throwaway cluster (fsync and synchronous_commit on, pg_stat_statements with track = all and
track_planning, track_functions = all): --jobs no-op runs of `noop` (examples/pgflight_demo)
bulk-submitted, then drained by --procs `pgflight worker` processes of --concurrency steps in
flight (batch size = concurrency, as bench/peers runs them). Prints:

- drain jobs/s (from the workers' start, their start-up included), commits and WAL bytes per job;
- CPU ms per job of the server processes and of the worker processes (utime + stime from /proc,
  read before and after the drain);
- the statements by total time (planning and execution, ms per job; nested ones included, so a
  function and the statements inside it both appear) and the functions by self time.

--claim-coalesce passes the worker's option (seconds; 0 claims at once) to compare the two.

Usage: python bench/burndown_profile.py [--jobs 20000] [--procs 2] [--concurrency 8] [--claim-coalesce 0.005]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import psycopg
from benchlib import throwaway_cluster
from worker_bench import start_workers, stop_workers

from pgflight import db

HZ = os.sysconf("SC_CLK_TCK")


def cpu_s() -> tuple[float, float]:
    """CPU seconds so far of (the server's processes, the pgflight worker processes)."""
    server = workers = 0.0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        t = (int(fields[11]) + int(fields[12])) / HZ
        if cmd.startswith(b"postgres"):
            server += t
        elif b"pgflight.cli" in cmd:
            workers += t
    return server, workers


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=20_000)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--claim-coalesce", type=float, default=0.005)
    a = ap.parse_args()
    settings = {
        "shared_preload_libraries": "pg_cron,pg_stat_statements",
        "pg_stat_statements.track": "all",
        "pg_stat_statements.track_planning": "on",
        "track_functions": "all",
    }
    with throwaway_cluster(settings=settings) as (_, dsn), psycopg.connect(dsn, autocommit=True) as c:
        c.execute("create extension if not exists pg_stat_statements")
        for lo in range(0, a.jobs, 10_000):
            runs = [{"recipe": "noop", "input": {"i": i}} for i in range(lo, min(a.jobs, lo + 10_000))]
            db.submit_many(c, "bench", runs)
        c.execute("checkpoint")
        c.execute("select pg_stat_statements_reset()")
        c.execute("select pg_stat_reset()")
        lsn0 = c.execute("select pg_current_wal_lsn()").fetchone()[0]  # type: ignore[index]
        commits = "select xact_commit from pg_stat_database where datname = current_database()"
        x0 = c.execute(commits).fetchone()[0]  # type: ignore[index]
        cpu0, t0 = cpu_s(), time.monotonic()
        procs = start_workers(dsn, a.procs, a.concurrency, "--claim-coalesce", str(a.claim_coalesce))
        left = "select count(*) from pgflight.step_attempts where status in ('queued', 'running')"
        while c.execute(left).fetchone()[0]:  # type: ignore[index]
            time.sleep(0.2)
        seconds = time.monotonic() - t0
        cpu1 = cpu_s()
        stop_workers(procs)
        x1 = c.execute(commits).fetchone()[0]  # type: ignore[index]
        wal = c.execute("select pg_current_wal_lsn() - %s::pg_lsn", [lsn0]).fetchone()[0]  # type: ignore[index]
        n = a.jobs
        print(
            f"{n} jobs, {a.procs} processes x {a.concurrency} in flight, "
            f"claim_coalesce_s {a.claim_coalesce}: "
            f"{n / seconds:.0f} jobs/s (start-up included), {(x1 - x0) / n:.2f} commits/job, "
            f"{wal / n:.0f} WAL bytes/job"
        )
        print(
            f"CPU ms per job: server {1000 * (cpu1[0] - cpu0[0]) / n:.3f}, "
            f"workers {1000 * (cpu1[1] - cpu0[1]) / n:.3f}"
        )
        print("statements (ms per job: plan, execution; calls; top-level?):")
        for calls, plan, exe, top, query in c.execute(
            "select calls, total_plan_time / %s, total_exec_time / %s, toplevel,"
            " left(regexp_replace(query, '\\s+', ' ', 'g'), 100)"
            " from pg_stat_statements order by total_plan_time + total_exec_time desc limit 15",
            [n, n],
        ):
            print(f"  {plan:7.4f} {exe:7.4f} {calls:7d} {'top' if top else '   '} {query}")
        print("functions (self ms per job, calls):")
        for name, calls, self_ms in c.execute(
            "select funcname, calls, self_time / %s from pg_stat_user_functions"
            " order by self_time desc limit 10",
            [n],
        ):
            print(f"  {self_ms:7.4f} {calls:7d} {name}")


if __name__ == "__main__":
    main()
