"""
Reclaim drain after a mass crash (issue 18), before and after, side by side in one cluster.

One throwaway cluster (fsync on), two databases: `before` deployed to the previous tag
(--tag, default the latest tag of sqitch.plan) and `after` at HEAD. In each, load_expired_leases writes N
runs with one running step whose lease lapsed an hour ago; then the backlog is drained until
nothing is left:
  calls   reclaim_expired(--batch, default 1000) until it returns 0 (perf_bench's drain: the same
          batch both sides);
  sweeps  run_sweeps() until reclaim_expired returns 0, committing each pass as sweep_loop does
          (sweep_state.reclaim_batch: up to 1,000 at @v0.4.0, up to 5,000 at HEAD).
Besides the rate: WAL bytes per reclaimed lease (pg_current_wal_insert_lsn, load-independent).
Prints one JSON document: reclaims/s, seconds, the longest call, the minutes 1,000,000 would take,
the load average. `--before` is smaller than `--after` by default because the old reclaim drains at
a few hundred rows/s (20,000 take minutes); rates, not totals, are compared.

Usage: python bench/reclaim_bench.py [--before 20000] [--after 200000] [--tag @v0.4.0] [--batch 1000]
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
from benchlib import load_expired_leases, throwaway_cluster

sys.path.insert(0, str(Path(__file__).resolve().parent))
from perf_bench import drain

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=int, default=20_000, help="expired leases on the previous tag")
    ap.add_argument("--after", type=int, default=200_000, help="expired leases at HEAD (the issue: 1000000)")
    ap.add_argument("--tag", default=None, help="the 'before' version (default: the latest tag)")
    ap.add_argument("--only", default="calls,sweeps")
    ap.add_argument("--batch", type=int, default=1000, help="reclaim_expired's limit in the calls phase")
    a = ap.parse_args()
    tag = a.tag or latest_tag()
    report: dict[str, Any] = {
        "bench": "reclaim",
        "before": tag,
        "after": "HEAD",
        "cpus": os.cpu_count(),
        "batch": a.batch,
    }
    started = time.perf_counter()
    with throwaway_cluster() as (_cluster, dsn):
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("create database before")
        before = psycopg.conninfo.make_conninfo(dsn, dbname="before")
        migrate.deploy(before, to=tag, verify=False)
        with psycopg.connect(before, autocommit=True) as c:
            c.execute("select pgflight.create_workspace('bench')")
        for how in a.only.split(","):
            for name, d, n in (("before", before, a.before), ("after", dsn, a.after)):
                report[f"{how}_{name}"] = side(d, n, how, a.batch)
                print(json.dumps({f"{how}_{name}": report[f"{how}_{name}"]}), file=sys.stderr, flush=True)
            ratio = report[f"{how}_after"]["rows_per_s"] / max(report[f"{how}_before"]["rows_per_s"], 1e-9)
            report[f"{how}_speedup"] = round(ratio, 1)
    report["total_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
