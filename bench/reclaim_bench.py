"""
Reclaim drain after a mass crash, before and after, side by side in one cluster.

One throwaway cluster (fsync on), two databases: `before` deployed to the previous tag
(--tag, default the latest tag of sqitch.plan) and `after` at HEAD. In each, load_expired_leases writes N
runs with one running step whose lease lapsed an hour ago; then the backlog is drained until
nothing is left:
  calls   reclaim_expired(--batch, default 1000) until it returns 0 (perf_bench's drain: the same
          batch both sides);
  sweeps  run_sweeps() until reclaim_expired returns 0, committing each pass as sweep_loop does
          (sweep_state.reclaim_batch: up to 1,000 at @v0.4.0, up to 5,000 since).
Besides the rate: WAL bytes per reclaimed lease (pg_current_wal_insert_lsn, load-independent).
Prints one JSON document: reclaims/s, seconds, the longest call, the minutes 1,000,000 would take,
the load average. `--before` is smaller than `--after` by default because the old reclaim drains at
a few hundred rows/s (20,000 take minutes); rates, not totals, are compared.

--interleave loads both databases first and then drains them one call each in turn, so the two
sides share the machine's load at every moment (each side's time is the sum of its own calls,
its WAL what was written during them, its backend's CPU (utime + stime, /proc) what its calls used:
less sensitive to the load than seconds); without it, before is drained, then after.

--before-tree deploys the before side from another checkout (all of its plan) instead of a tag of
this one: main beside a branch, e.g. `--before-tree /tmp/pgflight-main9`.

Usage: python bench/reclaim_bench.py [--before 20000] [--after 200000] [--tag @v0.4.0] [--batch 1000]
                                     [--only calls,sweeps] [--interleave] [--before-tree PATH]
A default run takes about 3-6 minutes on 2 loaded cores; --after 1000000 adds about 5 minutes;
--before 200000 adds about 3 (a quick look: --before 20000 --after 20000, about 1 minute).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
from benchlib import load_expired_leases, process_cpu_s, throwaway_cluster

sys.path.insert(0, str(Path(__file__).resolve().parent))
from perf_bench import drain, load

from pgflight import migrate


def latest_tag() -> str:
    plan = Path(__file__).resolve().parent.parent / "sqitch.plan"
    return [ln.split()[0] for ln in plan.read_text().splitlines() if ln.startswith("@")][-1]


def side(dsn: str, n: int, how: str, batch: int) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as c:
        t0 = time.perf_counter()
        load_expired_leases(c, n)
        loaded = round(time.perf_counter() - t0, 1)
        lsn0 = c.execute("select pg_current_wal_insert_lsn()::text").fetchone()
        if how == "calls":
            out = drain(c, "select pgflight.reclaim_expired(%s)", [batch])
        else:  # each pass commits (autocommit), as sweep_loop's do
            out = drain(c, "select affected from pgflight.run_sweeps() where sweep = 'reclaim_expired'", [])
        start = lsn0[0] if lsn0 else None
        wal_sql = "select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), %s::pg_lsn)"
        wal_row = c.execute(wal_sql, [start]).fetchone()
        out["wal_bytes_per_lease"] = round(float(wal_row[0]) / max(out["rows"], 1)) if wal_row else None
        out["minutes_for_1m"] = round(1_000_000 / max(out["rows_per_s"], 1e-9) / 60, 1)
        out["load_s"] = loaded
        left = c.execute(
            "select count(*) from pgflight.step_attempts where status in ('claimed', 'running')"
        ).fetchone()
        out["left_leased"] = int(left[0]) if left else -1
        c.execute("truncate pgflight.events, pgflight.step_attempts, pgflight.steps, pgflight.runs cascade")
        return out


def interleaved(sides: dict[str, tuple[str, int]], how: str, batch: int) -> dict[str, dict[str, Any]]:
    """
    Both sides loaded, then drained one call each in turn, so that both see the same load at the
    same moment (a shared machine): each side's seconds are the sum of its own calls, its WAL the
    sum of the WAL written during them (the position is the cluster's; the other side is idle).
    """
    sql = (
        ("select pgflight.reclaim_expired(%s)", [batch])
        if how == "calls"
        else ("select affected from pgflight.run_sweeps() where sweep = 'reclaim_expired'", [])
    )
    conns = {name: psycopg.connect(dsn, autocommit=True) for name, (dsn, _n) in sides.items()}
    out: dict[str, dict[str, Any]] = {}
    try:
        for name, (_dsn, n) in sides.items():
            t0 = time.perf_counter()
            load_expired_leases(conns[name], n)
            out[name] = {"load_s": round(time.perf_counter() - t0, 1), "rows": 0, "calls": 0, "seconds": 0.0}
            out[name].update({"longest_call_s": 0.0, "wal": 0, "loads": [], "cpu_s": 0.0})
        pids = {name: int(conns[name].info.backend_pid) for name in sides}
        live = list(sides)
        while live:
            for name in list(live):
                c, o = conns[name], out[name]
                lsn = c.execute("select pg_current_wal_insert_lsn()::text").fetchone()
                cpu = process_cpu_s(pids[name])
                t = time.perf_counter()
                row = c.execute(sql[0], sql[1]).fetchone()
                took = time.perf_counter() - t
                o["cpu_s"] += process_cpu_s(pids[name]) - cpu
                wal = c.execute(
                    "select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), %s::pg_lsn)",
                    [lsn[0] if lsn else None],
                ).fetchone()
                n = int(row[0]) if row else 0
                o["seconds"] += took
                o["calls"] += 1
                o["longest_call_s"] = max(o["longest_call_s"], took)
                o["wal"] += int(wal[0]) if wal else 0
                if o["calls"] % 20 == 1:
                    o["loads"].append(load())
                if n == 0:
                    live.remove(name)
                o["rows"] += n
        for name, o in out.items():
            c = conns[name]
            o["rows_per_s"] = round(o["rows"] / max(o["seconds"], 1e-9), 1)
            o["seconds"] = round(o["seconds"], 1)
            o["longest_call_s"] = round(o["longest_call_s"], 2)
            o["wal_bytes_per_lease"] = round(o.pop("wal") / max(o["rows"], 1))
            o["backend_cpu_us_per_lease"] = round(o.pop("cpu_s") * 1e6 / max(o["rows"], 1), 1)
            o["minutes_for_1m"] = round(1_000_000 / max(o["rows_per_s"], 1e-9) / 60, 1)
            loads = sorted(o.pop("loads"))
            o["load_avg"] = {"median": loads[len(loads) // 2], "min": loads[0], "max": loads[-1]}
            left = c.execute(
                "select count(*) from pgflight.step_attempts where status in ('claimed', 'running')"
            ).fetchone()
            o["left_leased"] = int(left[0]) if left else -1
            c.execute(
                "truncate pgflight.events, pgflight.step_attempts, pgflight.steps, pgflight.runs cascade"
            )
    finally:
        for c in conns.values():
            c.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=int, default=20_000, help="expired leases on the previous tag")
    ap.add_argument("--after", type=int, default=200_000, help="expired leases at HEAD (the target: 1000000)")
    ap.add_argument("--tag", default=None, help="the 'before' version (default: the latest tag)")
    ap.add_argument(
        "--before-tree",
        default=None,
        help="deploy the 'before' side from this checkout's plan (e.g. a clone of main) instead of --tag",
    )
    ap.add_argument("--only", default="calls,sweeps")
    ap.add_argument("--batch", type=int, default=1000, help="reclaim_expired's limit in the calls phase")
    ap.add_argument(
        "--interleave",
        action="store_true",
        help="load both sides, then drain them one call each in turn (both see the same load)",
    )
    a = ap.parse_args()
    tag = a.tag or latest_tag()
    report: dict[str, Any] = {
        "bench": "reclaim",
        "before": a.before_tree or tag,
        "after": "HEAD",
        "cpus": os.cpu_count(),
        "batch": a.batch,
    }
    started = time.perf_counter()
    with throwaway_cluster() as (_cluster, dsn):
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("create database before")
        before = psycopg.conninfo.make_conninfo(dsn, dbname="before")
        if a.before_tree:
            migrate.deploy(before, verify=False, root=Path(a.before_tree).resolve())
        else:
            migrate.deploy(before, to=tag, verify=False)
        with psycopg.connect(before, autocommit=True) as c:
            c.execute("select pgflight.create_workspace('bench')")
        for how in a.only.split(","):
            if a.interleave:
                both = interleaved({"before": (before, a.before), "after": (dsn, a.after)}, how, a.batch)
                for name, o in both.items():
                    report[f"{how}_{name}"] = o
                    print(json.dumps({f"{how}_{name}": o}), file=sys.stderr, flush=True)
            for name, d, n in (("before", before, a.before), ("after", dsn, a.after)):
                if a.interleave:
                    break
                report[f"{how}_{name}"] = side(d, n, how, a.batch)
                print(json.dumps({f"{how}_{name}": report[f"{how}_{name}"]}), file=sys.stderr, flush=True)
            ratio = report[f"{how}_after"]["rows_per_s"] / max(report[f"{how}_before"]["rows_per_s"], 1e-9)
            report[f"{how}_speedup"] = round(ratio, 1)
    report["total_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
