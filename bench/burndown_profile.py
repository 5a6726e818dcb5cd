"""
Where a burn-down's CPU goes, server and worker (issue 18). Prints its figures; not a test.

On a throwaway cluster (fsync and synchronous_commit on, pg_stat_statements with track = all and
track_planning, track_functions = all): --jobs no-op runs of `noop` (examples/pgflight_demo)
bulk-submitted, then drained by --procs `pgflight worker` processes of --concurrency steps in
flight (batch size = concurrency, as bench/peers runs them). Prints:

- drain jobs/s (from the workers' start, their start-up included), commits and WAL bytes per job;
- CPU ms per job of this cluster's server processes and of the worker processes it started
  (utime + stime from /proc, from the moment every worker has registered to the end of the drain);
- the statements by total time (planning and execution, ms per job; nested ones included, so a
  function and the statements inside it both appear) and the functions by self time.

--claim-coalesce passes the worker's option (seconds; 0 claims at once) to compare the two.

--compare REF deploys REF (a tag of sqitch.plan) in a second database of the same cluster and runs
--rounds burn-downs of each, alternating, with the same worker code: one JSON document of the
medians and HEAD / REF (the profile tables are printed only without --compare).

Usage: python bench/burndown_profile.py [--jobs 20000] [--procs 2] [--concurrency 8] [--claim-coalesce 0.005]
       python bench/burndown_profile.py --compare @v0.6.0 [--rounds 3] [--jobs 10000]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
from pathlib import Path

import psycopg
from benchlib import deploy_ref, throwaway_cluster
from worker_bench import start_workers, stop_workers

from pgflight import db

HZ = os.sysconf("SC_CLK_TCK")


def cpu_s(postmaster: int, workers: list[int]) -> dict[int, tuple[str, float]]:
    """
    CPU seconds so far of this cluster's server processes (the postmaster and its children) and of
    the given worker processes, by pid: (kind, seconds). The kind of a server process is its title
    ("walwriter", "autovacuum worker", a backend's "<user> <database>"), "worker" for a worker.
    Other clusters and workers on the machine are not counted.
    """
    seen: dict[int, tuple[str, float]] = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            title = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
        except OSError:
            continue
        t = (int(fields[11]) + int(fields[12])) / HZ
        if int(pid) == postmaster:
            seen[int(pid)] = ("postmaster", t)
        elif int(fields[1]) == postmaster:
            words = title.removeprefix("postgres: ").split()
            seen[int(pid)] = (" ".join(words[:2]) if words else "?", t)
        elif int(pid) in workers:
            seen[int(pid)] = ("worker", t)
    return seen


def cpu_delta(before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]) -> dict[str, float]:
    """CPU seconds between two cpu_s readings, by kind (processes that ended in between are lost)."""
    kinds: dict[str, float] = {}
    for pid, (kind, t) in after.items():
        kinds[kind] = kinds.get(kind, 0.0) + t - before.get(pid, (kind, 0.0))[1]
    return kinds


def burn(dsn: str, postmaster: int, a: argparse.Namespace, *, quiet: bool = False) -> dict[str, float]:
    """One burn-down of a.jobs runs in the database `dsn`; its figures (and the profile, unless quiet)."""
    with psycopg.connect(dsn, autocommit=True) as c:
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
        t0 = time.monotonic()
        procs = start_workers(dsn, a.procs, a.concurrency, "--claim-coalesce", str(a.claim_coalesce))
        pids = [p.pid for p in procs]
        # CPU per job from the moment every worker has registered: their imports are left out
        live = "select count(*) from pgflight.workers where stopped_at is null"
        while c.execute(live).fetchone()[0] < a.procs:  # type: ignore[index]
            time.sleep(0.005)
        cpu0 = cpu_s(postmaster, pids)
        succeeded = "select count(*) from pgflight.step_attempts where status = 'succeeded'"
        done0 = c.execute(succeeded).fetchone()[0]  # type: ignore[index]
        left = "select count(*) from pgflight.step_attempts where status in ('queued', 'running')"
        while c.execute(left).fetchone()[0]:  # type: ignore[index]
            time.sleep(0.2)
        seconds = time.monotonic() - t0
        cpu1 = cpu_s(postmaster, pids)
        stop_workers(procs)
        x1 = c.execute(commits).fetchone()[0]  # type: ignore[index]
        wal = c.execute("select pg_current_wal_lsn() - %s::pg_lsn", [lsn0]).fetchone()[0]  # type: ignore[index]
        c.execute("select pg_stat_force_next_flush()")
        hot = {
            t: (hot_upd / upd if upd else None)
            for t, upd, hot_upd in c.execute(
                "select relname, n_tup_upd, n_tup_hot_upd from pg_stat_user_tables"
                " where schemaname = 'pgflight' and relname in ('runs', 'steps', 'step_attempts')"
            )
        }
        # the next round starts from empty tables, as the first did
        c.execute("select pgflight.purge_finished(0, 1000000)")
        n, measured = a.jobs, a.jobs - done0
        fig = {
            "jobs_per_s": n / seconds,
            "commits_per_job": (x1 - x0) / n,
            "wal_bytes_per_job": float(wal) / n,
        }
        for t, ratio in hot.items():
            fig[f"hot_ratio_{t}"] = ratio if ratio is not None else float("nan")
        kinds = cpu_delta(cpu0, cpu1)
        fig["server_cpu_ms_per_job"] = 1000 * sum(v for k, v in kinds.items() if k != "worker") / measured
        fig["worker_cpu_ms_per_job"] = 1000 * kinds.get("worker", 0.0) / measured
        if quiet:
            return fig
        print(
            f"{n} jobs, {a.procs} processes x {a.concurrency} in flight, "
            f"claim_coalesce_s {a.claim_coalesce}: "
            f"{fig['jobs_per_s']:.0f} jobs/s (start-up included), {fig['commits_per_job']:.2f} commits/job, "
            f"{fig['wal_bytes_per_job']:.0f} WAL bytes/job"
        )
        print(
            f"CPU ms per job (from the workers' registration, {measured} jobs): "
            f"server {fig['server_cpu_ms_per_job']:.3f}, workers {fig['worker_cpu_ms_per_job']:.3f}"
        )
        print("HOT share of updates:", ", ".join(f"{t} {r:.2f}" if r is not None else f"{t} -" for t, r in hot.items()))
        print("server CPU ms per job by process:", ", ".join(
            f"{k} {1000 * v / measured:.3f}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]) if k != "worker"))
        print("statements (ms per job: plan, execution; calls; top-level?):")
        for calls, plan, exe, top, query in c.execute(
            "select calls, total_plan_time / %s, total_exec_time / %s, toplevel,"
            " left(regexp_replace(query, '\\s+', ' ', 'g'), 100)"
            " from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())"
            " order by total_plan_time + total_exec_time desc limit 15",
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
        return fig


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=20_000)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--claim-coalesce", type=float, default=0.005)
    ap.add_argument("--compare", metavar="REF", help="a schema of sqitch.plan (e.g. @v0.6.0) beside HEAD, paired")
    ap.add_argument("--rounds", type=int, default=3, help="with --compare: alternating rounds of each")
    a = ap.parse_args()
    settings = {
        "shared_preload_libraries": "pg_cron,pg_stat_statements",
        "pg_stat_statements.track": "all",
        "pg_stat_statements.track_planning": "on",
        "track_functions": "all",
    }
    with throwaway_cluster(settings=settings) as (cluster, dsn):
        postmaster = cluster.pid()
        assert postmaster is not None
        if not a.compare:
            burn(dsn, postmaster, a)
            return
        base = deploy_ref(cluster, a.compare)
        got: dict[str, list[dict[str, float]]] = {a.compare: [], "HEAD": []}
        for r in range(a.rounds):
            # alternate which goes first, so a drift in the machine's load falls on both
            for name, target in [(a.compare, base), ("HEAD", dsn)][:: 1 if r % 2 == 0 else -1]:
                got[name].append(burn(target, postmaster, a, quiet=True))
        load = os.getloadavg()
        medians = {name: {k: statistics.median(f[k] for f in figs) for k in figs[0]} for name, figs in got.items()}
        print(json.dumps({
            "jobs": a.jobs, "procs": a.procs, "concurrency": a.concurrency, "rounds": a.rounds,
            "loadavg": [round(x, 2) for x in load],
            "median": {n: {k: round(v, 4) for k, v in m.items()} for n, m in medians.items()},
            "head_over_base": {
            k: round(v / medians[a.compare][k], 3)
            for k, v in medians["HEAD"].items()
            if medians[a.compare][k] and math.isfinite(medians[a.compare][k])
        },
            "rounds_figures": got,
        }, indent=2))


if __name__ == "__main__":
    main()
