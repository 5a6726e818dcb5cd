"""
Runs bench/prototypes/narrow_queue_prototype.sql (the queue and lease state in narrow tables beside today's
step_attempts shape) on a throwaway cluster, --rounds times with the order of the shapes
rotated each round, and prints per shape and phase the medians of WAL bytes, backend CPU ms and
wall ms per step, the HOT ratio of the attempts, and the WAL split of the last round. Prints one
JSON document; not a test.

Usage: python bench/prototypes/narrow_queue_prototype.py [--steps 20000] [--batch 8] [--rounds 3]
           [--ff 50] [--one-live]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/: benchlib
from benchlib import throwaway_cluster

PSQL = "/usr/lib/postgresql/15/bin/psql"
SQL = Path(__file__).resolve().parent / "narrow_queue_prototype.sql"
ORDERS = (("a", "b", "c"), ("b", "c", "a"), ("c", "a", "b"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ff", type=int, default=50, help="fillfactor of the attempts of shapes b and c")
    ap.add_argument(
        "--one-live",
        action="store_true",
        help="b and c check the one-live-attempt rule (a unique step_id in the queue and the leases)",
    )
    a = ap.parse_args()
    rows: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
    loads = []
    split: dict[str, Any] = {}
    with throwaway_cluster() as (_, dsn):
        for r in range(a.rounds):
            order = ORDERS[r % len(ORDERS)]
            loads.append(round(os.getloadavg()[0], 1))
            subprocess.run(
                [
                    PSQL,
                    "-X",
                    "-q",
                    "-v",
                    f"steps={a.steps}",
                    "-v",
                    f"batch={a.batch}",
                    "-v",
                    f"ff={a.ff}",
                    "-v",
                    f"s1={order[0]}",
                    "-v",
                    f"s2={order[1]}",
                    "-v",
                    f"s3={order[2]}",
                    *(["-v", "live=1"] if a.one_live else []),
                    "-f",
                    str(SQL),
                    dsn,
                ],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            with psycopg.connect(dsn, autocommit=True) as c:
                for shape, phase, steps, wal, cpu, wall, hot, upd in c.execute(
                    "select shape, phase, steps, wal_bytes, cpu_ms, wall_ms, hot_updates, updates"
                    " from proto_queue.results"
                ).fetchall():
                    rows.setdefault((shape, phase), []).append(
                        (
                            float(wal) / steps,
                            cpu and float(cpu) / steps,
                            wall and float(wall) / steps,
                            hot / upd if upd else None,
                        )
                    )
                split = {}
                for shape, what, n, b, f in c.execute(
                    "select shape, what, records / %s, bytes / %s, fpi_bytes / %s"
                    " from proto_queue.wal_records where (bytes + fpi_bytes) / %s >= 2"
                    " order by shape, bytes + fpi_bytes desc",
                    [a.steps] * 4,
                ).fetchall():
                    split.setdefault(shape, {})[what] = [round(float(n), 2), round(float(b)), round(float(f))]

    def med(xs: list[Any]) -> float | None:
        return None if any(x is None for x in xs) else round(statistics.median(xs), 4)

    out: dict[str, Any] = {
        "steps": a.steps,
        "batch": a.batch,
        "rounds": a.rounds,
        "ff_b_c": a.ff,
        "one_live": a.one_live,
        "load_avg": loads,
    }
    for (shape, phase), vals in sorted(rows.items()):
        out.setdefault(shape, {})[phase] = {
            "wal_bytes_per_step": med([v[0] for v in vals]),
            "cpu_ms_per_step": med([v[1] for v in vals]),
            "wall_ms_per_step": med([v[2] for v in vals]),
            "hot_ratio": med([v[3] for v in vals]),
            "cpu_ms_per_step_rounds": [v[1] for v in vals],
        }
    out["wal_split_last_round_records_bytes_fpi_per_step"] = split
    print(json.dumps(out, indent=1, default=float))


if __name__ == "__main__":
    main()
