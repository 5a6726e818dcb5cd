"""
Fan-out benchmark (the fan-out target in docs/benchmarks.md). Prints one JSON document; not a test.

On a throwaway cluster with fsync and synchronous_commit on, in two databases side by side: one
deployed at the previous tag (--before, default @v0.3.0: the parent's counter on its row), one at
HEAD (the striped fan-in counter), each measured in turn, round after round, so both see the same
load on a shared machine:

- independent: N independent runs submitted in statements of 1,000, then C connections claim and
  complete them in batches (claim_batch + complete_batch) until none is left.
- fan-out: one parent is claimed and spawns N no-op children in one spawn_children call; then the
  same C connections claim and complete them the same way until the parent is woken. Measured:
  spawn time, total time, and the number of parent_resumed events (must be 1).

Targets: the claim + complete phase of children within 1.2x of independent steps
(ratio_claim_complete_phase), the whole fan-out within 1.5x, the parent woken once.
Usage: python bench/fanout_bench.py [--quick] [--children N] [--connections C] [--batch B]
       [--rounds R] [--before TAG | --before none]
A full run (100,000 children, one round, both databases) takes about 6 minutes on the 2-core
development machine; --quick (20,000) about 1.5 minutes per round.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

import psycopg
from benchlib import claim_complete_loop, register, run_threads, throwaway_cluster
from psycopg import sql
from psycopg.types.json import Jsonb

from pgflight import migrate
from pgflight.embedded import Cluster


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


def measure(dsn: str, n: int, connections: int, batch: int) -> dict[str, Any]:
    """Both shapes in one database: independent steps first, then the fan-out."""
    out: dict[str, Any] = {"independent": independent(dsn, n, connections, batch)}
    out["fan_out"] = fan_out(dsn, n, connections, batch)
    out["ratio_fan_out_to_independent"] = round(out["fan_out"]["total_s"] / out["independent"]["total_s"], 3)
    # the drain alone: without the striped fan-in counter children all finish through one hot
    # parent row
    out["ratio_claim_complete_phase"] = round(
        out["fan_out"]["claim_complete_s"] / out["independent"]["claim_complete_s"], 3
    )
    return out


def database(cluster: Cluster, admin_dsn: str, name: str, to: str | None) -> str:
    """A new database of the cluster deployed up to `to` (None: HEAD), with workspace bench."""
    with psycopg.connect(admin_dsn, autocommit=True) as c:
        c.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    dsn = cluster.dsn(name)
    migrate.deploy(dsn, verify=False, to=to)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select pgflight.create_workspace('bench')")
    return dsn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20,000 children instead of 100,000")
    parser.add_argument("--children", type=int, default=None)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=1, help="rounds, each in fresh databases")
    parser.add_argument("--before", default="@v0.3.0", help="tag deployed beside HEAD ('none': HEAD only)")
    args = parser.parse_args()
    n = args.children or (20_000 if args.quick else 100_000)
    report: dict[str, Any] = {
        "bench": "fanout",
        "children": n,
        "connections": args.connections,
        "batch": args.batch,
        "durability": "fsync=on synchronous_commit=on",
        "load_average_at_start": list(os.getloadavg()),
    }
    versions = {"head": None} if args.before == "none" else {"before": args.before, "head": None}
    rounds: list[dict[str, Any]] = []
    with throwaway_cluster() as (cluster, dsn):
        for r in range(args.rounds):
            got: dict[str, Any] = {}
            # alternate who goes first, so neither always runs on the warmer cache
            order = list(versions.items()) if r % 2 == 0 else list(reversed(versions.items()))
            for label, tag in order:
                got[label] = measure(
                    database(cluster, dsn, f"fanout_{label}_{r}", tag), n, args.connections, args.batch
                )
            rounds.append(got)
    report["load_average_at_end"] = list(os.getloadavg())
    report["rounds"] = rounds
    for label, tag in versions.items():
        phase = [r[label]["ratio_claim_complete_phase"] for r in rounds]
        whole = [r[label]["ratio_fan_out_to_independent"] for r in rounds]
        report[label] = {
            "deployed": tag or "HEAD",
            "ratio_claim_complete_phase_median": round(statistics.median(phase), 3),
            "ratio_fan_out_to_independent_median": round(statistics.median(whole), 3),
            "parent_woken_once_every_round": all(
                r[label]["fan_out"]["parent_resumed_events"] == 1 for r in rounds
            ),
        }
    head = report["head"]
    report["targets"] = {
        "head_claim_complete_within_1_2": head["ratio_claim_complete_phase_median"] <= 1.2,
        "head_fan_out_within_1_5": head["ratio_fan_out_to_independent_median"] <= 1.5,
        "parent_woken_once": head["parent_woken_once_every_round"],
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
