"""
WAL of a no-op step, phase by phase (WAL per step <= 1.2 kB). Prints one JSON document;
not a test.

On a throwaway cluster (fsync and synchronous_commit on, pg_walinspect): --steps no-op runs
submitted with submit_runs (batches of --submit-batch), then claimed with claim_batch (start, as
the worker claims; batches of --batch), then completed with complete_batch (batches of --batch),
each phase on its own so its WAL is its own (between two LSNs). Per step and phase:
pg_get_wal_records_info grouped by relation (the first block's), resource manager and record
type: records, bytes without full-page images, full-page-image bytes; and pg_get_wal_stats'
totals. A CHECKPOINT runs before each phase, so every phase pays the full-page images of the
pages it touches first (the worst case of a checkpoint in the middle of a burn-down; the FPI
share of a real server depends on its checkpoint_timeout and the working set).

--wal-compression runs the whole profile once per value (e.g. off,lz4,zstd: this build has both),
so the full-page images' share can be read beside their compressed size.
--compare @v0.7.0: the same profile first on a second database of the same cluster deployed at
that tag of sqitch.plan (benchlib.deploy_ref), then on HEAD.

Usage: python bench/wal_profile.py [--steps 20000] [--batch 8] [--wal-compression off,lz4]
       [--compare @v0.7.0]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import psycopg
from benchlib import Conn, deploy_ref, register, throwaway_cluster
from psycopg.types.json import Jsonb

START = Jsonb({"start": True})


def lsn(c: Conn) -> str:
    row = c.execute("select pg_current_wal_insert_lsn()::text").fetchone()
    assert row
    return str(row[0])


def breakdown(c: Conn, lsn0: str, lsn1: str, per: int, top: int) -> dict[str, Any]:
    """Records and bytes per step by relation and record type, and the totals of the range."""
    # pg_walinspect reads flushed WAL only ("cannot accept future end LSN"): the insert position
    # taken at the end of a phase is flushed by the WAL writer within its delay
    while c.execute("select pg_current_wal_flush_lsn() < %s::pg_lsn", [lsn1]).fetchone() == (True,):
        time.sleep(0.05)
    rows = c.execute(
        """
        select coalesce(pg_filenode_relation(0, (regexp_match(w.block_ref, 'rel \\d+/\\d+/(\\d+)'))[1]::oid)
                          ::text, '-') || ' ' || w.resource_manager || ':' || w.record_type as what,
               count(*), sum(w.record_length - w.fpi_length), sum(w.fpi_length)
          from pg_get_wal_records_info(%s::pg_lsn, %s::pg_lsn) w
         group by 1 order by sum(w.record_length) desc
        """,
        [lsn0, lsn1],
    ).fetchall()
    total = c.execute(
        "select count(*), sum(record_length - fpi_length), sum(fpi_length),"
        " count(*) filter (where fpi_length > 0) from pg_get_wal_records_info(%s::pg_lsn, %s::pg_lsn)",
        [lsn0, lsn1],
    ).fetchone()
    assert total
    upd = c.execute(
        "select count(*) filter (where block_ref like '%%blkref #1%%'), count(*)"
        " from pg_get_wal_records_info(%s::pg_lsn, %s::pg_lsn)"
        " where resource_manager = 'Heap' and record_type like 'UPDATE%%'",
        [lsn0, lsn1],
    ).fetchone()
    assert upd
    span = c.execute("select %s::pg_lsn - %s::pg_lsn", [lsn1, lsn0]).fetchone()
    assert span
    return {
        "wal_bytes_per_step": round(float(span[0]) / per),
        "records_per_step": round(total[0] / per, 2),
        "record_bytes_per_step_no_fpi": round(float(total[1] or 0) / per),
        "fpi_bytes_per_step": round(float(total[2] or 0) / per),
        "fpi_records_per_step": round(total[3] / per, 3),
        "non_hot_updates_to_another_page": f"{upd[0]} of {upd[1]}",
        "by_relation_and_record": {
            what: {
                "records": round(n / per, 2),
                "bytes": round(float(b) / per),
                "fpi_bytes": round(float(f) / per),
            }
            for what, n, b, f in rows[:top]
        },
    }


def profile(dsn: str, steps: int, batch: int, submit_batch: int, top: int, pre: list[str]) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("create extension if not exists pg_walinspect")
        for sql in pre:
            c.execute(sql)
        w = register(c, "walprof")
        # warm-up (catalog caches, plans, first pages), not counted
        for _ in range(3):
            c.execute(
                "select count(*) from pgflight.submit_runs('bench', (select jsonb_agg("
                "jsonb_build_object('recipe', 'noop')) from generate_series(1, %s)))",
                [batch],
            )
            got = c.execute(
                "select attempt_id, fencing_token from pgflight.claim_batch(%s, %s, 60, %s, %s)",
                [w, batch, ["noop"], START],
            ).fetchall()
            c.execute(
                "select count(*) from pgflight.complete_batch(%s, %s, array_fill(null::jsonb, array[%s]))",
                [[a for a, _ in got], [t for _, t in got], len(got)],
            )
        out: dict[str, Any] = {}
        c.execute("checkpoint")
        l0 = lsn(c)
        for i in range(0, steps, submit_batch):
            c.execute(
                "select count(*) from pgflight.submit_runs('bench', (select jsonb_agg("
                "jsonb_build_object('recipe', 'noop')) from generate_series(1, %s)))",
                [min(submit_batch, steps - i)],
            )
        l1 = lsn(c)
        out["submit"] = breakdown(c, l0, l1, steps, top)
        c.execute("checkpoint")
        l0 = lsn(c)
        claimed: list[tuple[int, int]] = []
        while len(claimed) < steps:
            got = c.execute(
                "select attempt_id, fencing_token from pgflight.claim_batch(%s, %s, 3600, %s, %s)",
                [w, batch, ["noop"], START],
            ).fetchall()
            if not got:
                break
            claimed.extend(got)
        l1 = lsn(c)
        out["claim"] = breakdown(c, l0, l1, len(claimed), top)
        c.execute("checkpoint")
        l0 = lsn(c)
        for i in range(0, len(claimed), batch):
            part = claimed[i : i + batch]
            c.execute(
                "select count(*) from pgflight.complete_batch(%s, %s, array_fill(null::jsonb, array[%s]))",
                [[a for a, _ in part], [t for _, t in part], len(part)],
            )
        l1 = lsn(c)
        out["complete"] = breakdown(c, l0, l1, len(claimed), top)
        out["steps"] = len(claimed)
        out["total_wal_bytes_per_step"] = sum(
            out[p]["wal_bytes_per_step"] for p in ("submit", "claim", "complete")
        )
        out["total_no_fpi_bytes_per_step"] = sum(
            out[p]["record_bytes_per_step_no_fpi"] for p in ("submit", "claim", "complete")
        )
        out["hot"] = {
            r: {"upd": u, "hot": h}
            for r, u, h in c.execute(
                "select relname, n_tup_upd, n_tup_hot_upd from pg_stat_user_tables"
                " where schemaname = 'pgflight' and n_tup_upd > 0"
            ).fetchall()
        }
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--submit-batch", type=int, default=500)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--wal-compression", default="off")
    ap.add_argument("--pre", action="append", default=[], help="SQL run first in each database (experiments)")
    ap.add_argument("--compare", help="a tag of sqitch.plan (e.g. @v0.7.0) deployed beside HEAD")
    a = ap.parse_args()
    report: dict[str, Any] = {"load_avg": round(os.getloadavg()[0], 1), "steps": a.steps, "batch": a.batch}
    for comp in a.wal_compression.split(","):
        with throwaway_cluster(settings={"wal_compression": comp}) as (cluster, dsn):
            dbs = {"head": dsn}
            if a.compare:
                dbs = {"base": deploy_ref(cluster, a.compare), "head": dsn}
            report[f"wal_compression={comp}"] = {
                name: profile(d, a.steps, a.batch, a.submit_batch, a.top, a.pre) for name, d in dbs.items()
            }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
