"""
Fan-out benchmark (issue 4, DESIGN §8). Prints one JSON document; not a test.

On a throwaway cluster with fsync and synchronous_commit on:

- fan-out: one parent is claimed and spawns N no-op children in one spawn_children call; then C
  connections claim and complete them in batches (claim_batch + complete_batch) until the parent
  is woken. Measured: spawn time, total time, and the number of parent_resumed events (must be 1).
- independent: N independent runs submitted in statements of 1,000, then the same C connections
  claim and complete them the same way.

The ratio fan-out / independent is the target of DESIGN §8 (<= 1.5): no O(N) work per child.
Usage: python bench/fanout_bench.py [--quick] [--children N] [--connections C]
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import psycopg
from benchlib import claim_complete_loop, register, run_threads, throwaway_cluster
from psycopg.types.json import Jsonb


def fan_out(dsn: str, n: int, connections: int, batch: int) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as c:
        t0 = time.perf_counter()
        row = c.execute("select step_id from pgflight.submit_run('bench', 'parent', '{}')").fetchone()
        assert row is not None
        parent = row[0]
        w = register(c, "parent-worker")
        a, t = c.execute(
            "select attempt_id, fencing_token from pgflight.claim_batch(%s, 1, 600, array['parent'])", [w]
        ).fetchone()  # type: ignore[misc]
        c.execute("select pgflight.start_step(%s, %s)", [a, t])
        children = [{"key": f"c{i:06d}", "recipe": "child", "input": {}} for i in range(n)]
        got = c.execute(
            "select created, parked from pgflight.spawn_children(%s, %s, %s)", [a, t, Jsonb(children)]
        ).fetchone()
        assert got == (n, True), got
        spawned = time.perf_counter() - t0
        done, _ = run_threads(connections, lambda i: claim_complete_loop(dsn, f"fan-{i}", ["child"], batch))
        total = time.perf_counter() - t0
        status = c.execute("select status from pgflight.step_status where step_id = %s", [parent]).fetchone()
        resumed = c.execute(
            "select count(*) from pgflight.events where step_id = %s and reason = 'parent_resumed'", [parent]
        ).fetchone()
    assert done == n, (done, n)
    return {
        "children": n,
        "spawn_s": round(spawned, 2),
        "total_s": round(total, 2),
        "claim_complete_s": round(total - spawned, 2),
        "steps_per_s": round(n / total, 1),
        "parent_status": status[0] if status else None,
        "parent_resumed_events": resumed[0] if resumed else None,
    }


def independent(dsn: str, n: int, connections: int, batch: int) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as c:
        t0 = time.perf_counter()
        for lo in range(0, n, 1000):
            c.execute(
                "select pgflight.submit_run('bench', 'solo', '{}') from generate_series(1, %s)",
                [min(1000, n - lo)],
            )
        submitted = time.perf_counter() - t0
        done, _ = run_threads(connections, lambda i: claim_complete_loop(dsn, f"solo-{i}", ["solo"], batch))
        total = time.perf_counter() - t0
    assert done == n, (done, n)
    return {
        "steps": n,
        "submit_s": round(submitted, 2),
        "total_s": round(total, 2),
        "claim_complete_s": round(total - submitted, 2),
        "steps_per_s": round(n / total, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20,000 children instead of 100,000")
    parser.add_argument("--children", type=int, default=None)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--batch", type=int, default=50)
    args = parser.parse_args()
    n = args.children or (20_000 if args.quick else 100_000)
    report: dict[str, Any] = {
        "bench": "fanout",
        "quick": args.quick,
        "connections": args.connections,
        "batch": args.batch,
        "durability": "fsync=on synchronous_commit=on",
    }
    with throwaway_cluster() as (_, dsn):
        report["independent"] = independent(dsn, n, args.connections, args.batch)
        report["fan_out"] = fan_out(dsn, n, args.connections, args.batch)
    report["ratio_fan_out_to_independent"] = round(
        report["fan_out"]["total_s"] / report["independent"]["total_s"], 3
    )
    # the drain alone: children all finish through one hot parent row (its children_pending counter)
    report["ratio_claim_complete_phase"] = round(
        report["fan_out"]["claim_complete_s"] / report["independent"]["claim_complete_s"], 3
    )
    report["targets"] = {
        "ratio_at_most_1_5": report["ratio_fan_out_to_independent"] <= 1.5,
        "parent_woken_once": report["fan_out"]["parent_resumed_events"] == 1,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
