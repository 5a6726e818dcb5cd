"""
The cost of the trust boundary's checks on the hot path (claim_batch with its start option, then
complete_step / complete_batch), before and after, in one run on one cluster. Prints one JSON
document; not a test.

One throwaway cluster (fsync and synchronous_commit on, as bench/core_bench.py) holds three databases:

    before     the schema of another revision (default `main`), exported with `git archive`
    after      this checkout, the bench login granted the worker and operator lanes on every workspace
               (a single-tenant install: claim_batch's query is unchanged)
    tenant     this checkout, the login granted only workspace `bench` (claim_batch probes runs per
               candidate row)

Each runs core_bench's no-op pipeline as a non-superuser login (superusers skip the checks), at 1
and 4 connections, one step per call and batched by ten; the variants alternate, twice each, and
the better of the two rounds is kept, to damp the noise of a shared machine.

Usage: python bench/tenancy_bench.py [--before REV] [--seconds S]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

import psycopg
from benchlib import run_threads, throwaway_cluster
from core_bench import _pipeline_body
from psycopg import sql
from psycopg.conninfo import make_conninfo

from pgflight import migrate
from pgflight.embedded import source_root

LOGIN = "bench_login"


def export_revision(rev: str, into: Path) -> Path:
    """The tree of `rev` (sqitch.plan and sql/) written under `into`; its path."""
    tar = subprocess.run(
        ["git", "-C", str(source_root()), "archive", rev, "sqitch.plan", "sqitch.conf", "sql"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(tar)) as t:
        t.extractall(into, filter="data")
    return into


def prepare(admin_dsn: str, name: str, root: Path | None, grant: str | None) -> str:
    """Create database `name`, deploy, create workspace bench, grant LOGIN; return LOGIN's DSN."""
    with psycopg.connect(admin_dsn, autocommit=True) as c:
        c.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    dsn = make_conninfo(admin_dsn, dbname=name)
    migrate.deploy(dsn, verify=False, root=root)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select pgflight.create_workspace('bench')")
        if c.execute("select to_regproc('pgflight.grant_workspace')").fetchone() != (None,):
            for lane in ("worker", "operator"):
                c.execute("select pgflight.grant_workspace(%s, %s, %s)", [LOGIN, grant, lane])
    return make_conninfo(dsn, user=LOGIN)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="main", help="the revision to compare with (default main)")
    parser.add_argument("--seconds", type=float, default=5, help="seconds per measurement (default 5)")
    args = parser.parse_args()
    started = time.perf_counter()
    report: dict[str, Any] = {"bench": "tenancy", "before": args.before, "durability": "fsync=on"}
    with throwaway_cluster() as (_cluster, admin), tempfile.TemporaryDirectory() as tmp:
        with psycopg.connect(admin, autocommit=True) as c:
            c.execute(f"create role {LOGIN} login in role pgflight_worker, pgflight_operator")
        before_root = export_revision(args.before, Path(tmp))
        dsns = {
            "before": prepare(admin, "before", before_root, None),
            "after": prepare(admin, "after", None, None),
            "tenant": prepare(admin, "tenant", None, "bench"),
        }
        best: dict[tuple[str, int, int], float] = {}
        for _round in range(2):
            for batch in (1, 10):
                for n in (1, 4):
                    for variant, dsn in dsns.items():
                        steps, wall = run_threads(n, _pipeline_body(dsn, args.seconds, batch))
                        rate = steps / wall
                        key = (variant, batch, n)
                        best[key] = max(best.get(key, 0.0), rate)
                        print(
                            json.dumps(
                                {
                                    "variant": variant,
                                    "batch": batch,
                                    "connections": n,
                                    "steps_per_s": round(rate, 1),
                                }
                            ),
                            file=sys.stderr,
                            flush=True,
                        )
        rows = []
        for batch in (1, 10):
            for n in (1, 4):
                base = best[("before", batch, n)]
                row: dict[str, Any] = {"batch": batch, "connections": n, "before_steps_per_s": round(base, 1)}
                for variant in ("after", "tenant"):
                    rate = best[(variant, batch, n)]
                    row[f"{variant}_steps_per_s"] = round(rate, 1)
                    row[f"{variant}_change_pct"] = round(100 * (rate / base - 1), 1)
                rows.append(row)
        report["pipeline"] = rows
    report["total_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
