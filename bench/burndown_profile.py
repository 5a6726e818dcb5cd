"""
Where a burn-down's CPU goes, server and worker. Prints its figures; not a test.

On a throwaway cluster (fsync and synchronous_commit on, pg_stat_statements with track = all and
track_planning, track_functions = all): --jobs no-op runs of `noop` (examples/pgflight_demo)
bulk-submitted, then drained by --procs `pgflight worker` processes of --concurrency steps in
flight (batch size = concurrency, as bench/peers runs them). Prints:

- drain jobs/s (from the workers' start, their start-up included), commits and WAL bytes per job
  (and of those the full-page images' bytes, pg_walinspect; the drain starts after a checkpoint);
- CPU ms per job of the server processes and of the worker processes (utime + stime from /proc,
  read before and after the drain);
- the statements by total time (planning and execution, ms per job; nested ones included, so a
  function and the statements inside it both appear) and the functions by self time.

--setting NAME=VALUE (repeatable) sets a server setting of the throwaway cluster, e.g.
wal_compression=zstd.

--claim-coalesce passes the worker's option (seconds; 0 claims at once) to compare the two.

--compare DIR drains the burn-down with the worker code of another source tree (DIR's
python_worker and examples first on the workers' PYTHONPATH, e.g. a clone checked out at
``@v0.6.0``) and with this tree's, --rounds times each, alternating which goes first, in one
cluster (the tables emptied between drains); prints per round and the medians: jobs/s and CPU ms
per job of the server and of the workers, measured from the first completion (start-up not
counted), with the load average. Both use this tree's SQL, so only the worker's Python differs.

--compare REF, where REF is not a directory (a tag of sqitch.plan such as ``@v1.0.0``, one of the
plan before the re-baseline such as ``@v0.9.0``, or a git commit or branch): the other way round,
the SQL differs and the worker is this tree's. The base side drains a second database of the same
cluster deployed at REF (benchlib.deploy_ref), HEAD's the database deployed from this tree; the
same rounds, alternation and figures.

Usage: python bench/burndown_profile.py [--jobs 20000] [--procs 2] [--concurrency 8] [--claim-coalesce 0.005]
       python bench/burndown_profile.py --compare /tmp/pgflight-v0.6.0 [--rounds 3] [--jobs 10000]
       python bench/burndown_profile.py --compare @v0.9.0 [--rounds 3] [--jobs 10000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import psycopg
from benchlib import deploy_ref, throwaway_cluster
from worker_bench import start_workers, stop_workers

from pgflight import db

HZ = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def cpu_s(postmaster: int, workers: list[int]) -> tuple[float, float]:
    """
    CPU seconds so far of (this cluster's processes, the `workers` processes), utime + stime from
    /proc: the postmaster with its ended children (autovacuum workers and the like) and its live
    children. Other clusters and workers on the host (other engineers' tests) are not counted.
    """
    server = 0.0
    for pid in os.listdir("/proc"):
        if pid.isdigit() and (f := _stat(int(pid))) is not None:
            if int(pid) == postmaster:
                server += sum(int(x) for x in f[11:15]) / HZ
            elif int(f[1]) == postmaster:
                server += (int(f[11]) + int(f[12])) / HZ
    mine = 0.0
    for pid in workers:
        if (f := _stat(pid)) is not None:
            mine += (int(f[11]) + int(f[12])) / HZ
    return server, mine


def postmaster_of(c: psycopg.Connection[tuple[object, ...]]) -> int:
    """The postmaster's pid: the parent of this connection's backend."""
    backend = c.execute("select pg_backend_pid()").fetchone()[0]  # type: ignore[index]
    f = _stat(int(backend))
    assert f is not None
    return int(f[1])


def drain(
    dsn: str, c: psycopg.Connection[tuple[object, ...]], a: argparse.Namespace, path: str | None
) -> dict[str, float]:
    """
    Empty the tables, submit a.jobs no-op runs, drain them with workers importing from `path`
    (None: this tree); measured from the first completion on, so the processes' start-up
    (imports: about 0.3 s of CPU each) is not counted.
    """
    c.execute(
        "truncate pgflight.events, pgflight.effects, pgflight.approvals, pgflight.step_attempts,"
        " pgflight.steps, pgflight.runs cascade"
    )
    for lo in range(0, a.jobs, 10_000):
        runs = [{"recipe": "noop", "input": {"i": i}} for i in range(lo, min(a.jobs, lo + 10_000))]
        db.submit_many(c, "bench", runs)
    c.execute("vacuum analyze pgflight.step_attempts")
    c.execute("checkpoint")
    env = dict(os.environ)
    if path is not None:
        os.environ["PYTHONPATH"] = os.pathsep.join([f"{path}/python_worker", f"{path}/examples"])
    try:
        procs = start_workers(dsn, a.procs, a.concurrency, "--claim-coalesce", str(a.claim_coalesce))
    finally:
        os.environ.clear()
        os.environ.update(env)
    pids, postmaster = [p.pid for p in procs], postmaster_of(c)
    done = "select count(*) from pgflight.step_attempts where status = 'succeeded'"
    while not c.execute(done).fetchone()[0]:  # type: ignore[index]
        time.sleep(0.01)
    commits = "select xact_commit from pg_stat_database where datname = current_database()"
    cpu0, t0, n0 = cpu_s(postmaster, pids), time.monotonic(), c.execute(done).fetchone()[0]  # type: ignore[index]
    x0 = c.execute(commits).fetchone()[0]  # type: ignore[index]
    left = "select count(*) from pgflight.step_attempts where status in ('queued', 'running')"
    while c.execute(left).fetchone()[0]:  # type: ignore[index]
        time.sleep(0.05)
    seconds = time.monotonic() - t0
    cpu1 = cpu_s(postmaster, pids)
    stop_workers(procs)
    time.sleep(0.5)  # the workers' backends flush their statistics as they exit
    x1 = c.execute(commits).fetchone()[0]  # type: ignore[index]
    n = a.jobs - int(n0)  # type: ignore[call-overload]
    return {
        "jobs_s": n / seconds,
        "server_ms": 1000 * (cpu1[0] - cpu0[0]) / n,
        "workers_ms": 1000 * (cpu1[1] - cpu0[1]) / n,
        "commits": (x1 - x0) / n,  # the batching: fewer commits per job, fewer round trips
        "load": os.getloadavg()[0],
    }


def compare(a: argparse.Namespace) -> None:
    """
    Alternating drains of the base side and this tree; per round and the medians. The base side
    is the other tree's worker on this tree's SQL (a.compare a directory), or this tree's worker on
    a database deployed at a.compare (a plan tag or git ref).
    """
    settings = dict(kv.split("=", 1) for kv in a.setting)
    worker_tree = os.path.isdir(a.compare)
    with throwaway_cluster(settings=settings) as (cluster, dsn), psycopg.connect(dsn, autocommit=True) as c:
        base_dsn = dsn if worker_tree else deploy_ref(cluster, a.compare)
        with psycopg.connect(base_dsn, autocommit=True) as base_c:
            compare_rounds(
                a, {"base": (base_dsn, base_c, a.compare if worker_tree else None), "head": (dsn, c, None)}
            )


def compare_rounds(
    a: argparse.Namespace, sides: dict[str, tuple[str, psycopg.Connection[tuple[object, ...]], str | None]]
) -> None:
    """a.rounds drains of each side (dsn, connection, worker tree), alternating which goes first."""
    out: dict[str, list[dict[str, float]]] = {"base": [], "head": []}
    for r in range(a.rounds):
        for side in ["base", "head"] if r % 2 == 0 else ["head", "base"]:
            side_dsn, side_c, path = sides[side]
            m = drain(side_dsn, side_c, a, path)
            out[side].append(m)
            print(
                f"round {r + 1} {side}: {m['jobs_s']:.0f} jobs/s, CPU ms per job: server "
                f"{m['server_ms']:.3f}, workers {m['workers_ms']:.3f}; {m['commits']:.2f} commits/job "
                f"(load {m['load']:.1f})",
                flush=True,
            )
    print(f"medians of {a.rounds} rounds, {a.jobs} jobs, {a.procs} x {a.concurrency} in flight:")
    for side in ("base", "head"):
        ms = out[side]
        print(
            f"  {side} ({a.compare if side == 'base' else 'this tree'}): "
            f"{statistics.median(m['jobs_s'] for m in ms):.0f} jobs/s, CPU ms per job: server "
            f"{statistics.median(m['server_ms'] for m in ms):.3f}, workers "
            f"{statistics.median(m['workers_ms'] for m in ms):.3f}; "
            f"{statistics.median(m['commits'] for m in ms):.2f} commits/job"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=20_000)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--claim-coalesce", type=float, default=0.005)
    ap.add_argument(
        "--compare",
        metavar="DIR|REF",
        help="another source tree (its worker drains too), or a plan tag or git ref (its SQL drains too)",
    )
    ap.add_argument("--rounds", type=int, default=3, help="with --compare: drains of each")
    ap.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a server setting of the throwaway cluster (repeatable), e.g. wal_compression=zstd",
    )
    a = ap.parse_args()
    if a.compare:
        compare(a)
        return
    settings = {
        "shared_preload_libraries": "pg_cron,pg_stat_statements",
        "pg_stat_statements.track": "all",
        "pg_stat_statements.track_planning": "on",
        "track_functions": "all",
        **dict(kv.split("=", 1) for kv in a.setting),
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
        postmaster, t0 = postmaster_of(c), time.monotonic()
        procs = start_workers(dsn, a.procs, a.concurrency, "--claim-coalesce", str(a.claim_coalesce))
        pids = [p.pid for p in procs]
        cpu0 = cpu_s(postmaster, pids)
        left = "select count(*) from pgflight.step_attempts where status in ('queued', 'running')"
        while c.execute(left).fetchone()[0]:  # type: ignore[index]
            time.sleep(0.2)
        seconds = time.monotonic() - t0
        cpu1 = cpu_s(postmaster, pids)
        stop_workers(procs)
        x1 = c.execute(commits).fetchone()[0]  # type: ignore[index]
        lsn1 = c.execute("select pg_current_wal_lsn()").fetchone()[0]  # type: ignore[index]
        wal = c.execute("select %s::pg_lsn - %s::pg_lsn", [lsn1, lsn0]).fetchone()[0]  # type: ignore[index]
        c.execute("create extension if not exists pg_walinspect")
        fpi = c.execute(
            "select coalesce(sum(fpi_length), 0) from pg_get_wal_records_info(%s::pg_lsn, %s::pg_lsn)",
            [lsn0, lsn1],
        ).fetchone()[0]  # type: ignore[index]
        n = a.jobs
        print(
            f"{n} jobs, {a.procs} processes x {a.concurrency} in flight, "
            f"claim_coalesce_s {a.claim_coalesce}: "
            f"{n / seconds:.0f} jobs/s (start-up included), {(x1 - x0) / n:.2f} commits/job, "
            f"{wal / n:.0f} WAL bytes/job (full-page images {fpi / n:.0f})"
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
