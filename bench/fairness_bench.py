"""
Fairness benchmark. Prints one JSON document; not a test.

On a throwaway cluster with fsync and synchronous_commit on:

1. claim cost: four workers drain 20,000 queued no-op steps over four workspaces with
   claim_batch(10) + complete_batch, in three databases of one cluster: `baseline` (the schema
   before the fair claim: one global ready index, no fairness), `off` (the fair claim, no limit set)
   `on_local` (every workspace capped at 1,000 in flight, every step under one of 500 concurrency
   keys with a limit of 5: all checked on every claim, none binding) and `on` (the same plus a
   global cap of 100,000, which makes claims take turns).
   Reports claim_batch p50/p99 (ms) and steps/s. Targets: on vs off p99 within 1.3x, throughput
   at least 0.8x. With --compare-to TAG, `off`, `on_local` and `on` are also deployed at TAG
   (e.g. @v0.3.0) and drained in the same run, interleaved with HEAD's, so a change's before and
   after are measured side by side on the same loaded machine.
2. quiet tenant: four workers claim(10) + complete; a quiet workspace submits one step every
   20 ms; its wait (claimed_at - created_at, from the attempts table) p50/p99 while another
   workspace's 100,000-step burst drains, and with no burst. Target: within 2x.
3. rare recipe: claim_batch(1, recipes => ['rare']) latency with 200,000 steps of other recipes
   queued (same workspace and others) against an empty queue. Target: p99 within 2x.

Usage: python bench/fairness_bench.py [--quick] [--only-claim-cost] [--compare-to @v0.3.0] [--rounds N]
(--quick: a tenth of the sizes). A full run takes about 15 minutes on two loaded cores; the
claim-cost part alone about 4 minutes, twice that with --compare-to, N times with --rounds N.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from typing import Any

import psycopg
from benchlib import Conn, percentile, register, throwaway_cluster
from psycopg.types.json import Jsonb

from pgflight import migrate

# The last change of the plan before the fair claim: the baseline database is deployed up to it.
BASELINE_CHANGE = "@v0.2.0"


def spawn_backlog(conn: Conn, workspace: str, n: int, recipe: str, per_parent: int = 50_000) -> None:
    """Queue n steps of `recipe` in `workspace` through fan-outs (fast, like a real bulk job)."""
    parents = -(-n // per_parent)
    conn.execute(
        "select pgflight.submit_run(%s, 'bench_parent', '{}') from generate_series(1, %s)",
        [workspace, parents],
    )
    w = register(conn, "spawner")
    got = conn.execute(
        "select attempt_id, fencing_token from pgflight.claim_batch(%s, %s, 3600, array['bench_parent'], %s)",
        [w, parents, Jsonb({"start": True})],
    ).fetchall()
    left = n
    for attempt_id, token in got:
        k = min(per_parent, left)
        left -= k
        conn.execute(
            "select pgflight.spawn_children(%s, %s, (select jsonb_agg(jsonb_build_object("
            "'key', g::text, 'recipe', %s::text, 'input', '{}'::jsonb)) from generate_series(1, %s) g))",
            [attempt_id, token, recipe, k],
        )
    conn.execute("vacuum analyze pgflight.step_attempts, pgflight.steps")


def drain(dsn: str, threads: int, batch: int = 10) -> dict[str, Any]:
    """`threads` workers claim(batch) + complete_batch until empty; claim latency and throughput."""
    lat: list[float] = []
    lock = threading.Lock()
    done = [0]

    def body() -> None:
        mine: list[float] = []
        n = 0
        with psycopg.connect(dsn, autocommit=True) as c:
            w = register(c, "drain")
            idle = 0
            while idle < 3:
                t0 = time.perf_counter()
                got = c.execute(
                    "select attempt_id, fencing_token from pgflight.claim_batch(%s, %s, 60)", [w, batch]
                ).fetchall()
                mine.append((time.perf_counter() - t0) * 1000)
                if not got:
                    idle += 1
                    continue
                idle = 0
                c.execute(
                    "select count(*) from pgflight.complete_batch(%s, %s,"
                    " array_fill(null::jsonb, array[%s]))",
                    [[a for a, _ in got], [t for _, t in got], len(got)],
                )
                n += len(got)
        with lock:
            lat.extend(mine)
            done[0] += n

    workers = [threading.Thread(target=body) for _ in range(threads)]
    t0 = time.perf_counter()
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    wall = time.perf_counter() - t0
    return {
        "steps": done[0],
        "steps_per_s": round(done[0] / wall, 1),
        "claim_p50_ms": round(percentile(lat, 50), 3),
        "claim_p99_ms": round(percentile(lat, 99), 3),
    }


def ratios(out: dict[str, Any], a: str, b: str) -> dict[str, float]:
    """p99 and throughput of configuration a against b (medians over rounds)."""
    return {
        "p99_ratio": round(out[a]["claim_p99_ms"] / out[b]["claim_p99_ms"], 2),
        "throughput_ratio": round(out[a]["steps_per_s"] / out[b]["steps_per_s"], 2),
    }


def claim_cost(cluster: Any, dsn: str, steps: int, compare_to: str | None, rounds: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    names = ["baseline", "off", "on_local", "on"]
    if compare_to:
        names += [f"{n}{compare_to}" for n in ("off", "on_local", "on")]
    runs: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    for r in range(rounds):
        for name in names:
            runs[name].append(claim_cost_one(cluster, dsn, steps, name, f"{r}"))
    for name in names:
        got = runs[name]
        keys = ("steps_per_s", "claim_p50_ms", "claim_p99_ms")
        out[name] = {k: sorted(g[k] for g in got)[len(got) // 2] for k in keys} | {
            "steps": got[0]["steps"],
            "rounds": [(g["steps_per_s"], g["claim_p99_ms"]) for g in got],
        }
    out["on_vs_off"] = ratios(out, "on", "off")
    out["on_local_vs_off"] = ratios(out, "on_local", "off")
    out["off_vs_baseline"] = ratios(out, "off", "baseline")
    if compare_to:
        out[f"on_vs_off{compare_to}"] = ratios(out, f"on{compare_to}", f"off{compare_to}")
        out[f"on_local_vs_off{compare_to}"] = ratios(out, f"on_local{compare_to}", f"off{compare_to}")
        out[f"off{compare_to}_vs_baseline"] = ratios(out, f"off{compare_to}", "baseline")
    return out


def claim_cost_one(cluster: Any, dsn: str, steps: int, name: str, round_: str) -> dict[str, Any]:
    """One drain of `steps` in a fresh database configured as `name` (see the module doc)."""
    kind, _, tag = name.partition("@")
    db_name = f"bench_{kind}_{tag.replace('.', '_')}_{round_}"
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(f"create database {db_name}")
    db = cluster.dsn(db_name)
    try:
        to = BASELINE_CHANGE if kind == "baseline" else (f"@{tag}" if tag else None)
        migrate.deploy(db, verify=False, to=to)
        with psycopg.connect(db, autocommit=True) as c:
            for i in range(4):
                c.execute("select pgflight.create_workspace(%s)", [f"w{i}"])
                if kind.startswith("on"):
                    c.execute(
                        "select pgflight.set_workspace_limits(%s, %s)",
                        [f"w{i}", Jsonb({"max_in_flight": 1000})],
                    )
                c.execute(
                    "select pgflight.submit_run(%s, 'noop', '{}', case when %s then"
                    " jsonb_build_object('concurrency_key', 'k' || (g %% 500), 'concurrency_limit', 5)"
                    " else '{}'::jsonb end) from generate_series(1, %s) g",
                    [f"w{i}", kind.startswith("on"), steps // 4],
                )
            if kind == "on":
                c.execute("select pgflight.set_global_limits('{\"max_in_flight\": 100000}')")
            c.execute("vacuum analyze")
        return drain(db, 4)
    finally:
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(f"drop database if exists {db_name} with (force)")


def quiet_tenant(dsn: str, burst: int, seconds: float) -> dict[str, Any]:
    """The quiet workspace's waits while four workers drain, with `burst` steps queued elsewhere."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("truncate pgflight.events, pgflight.step_attempts, pgflight.steps, pgflight.runs cascade")
        c.execute("select pgflight.create_workspace('burst'), pgflight.create_workspace('quiet')")
        if burst:
            spawn_backlog(c, "burst", burst, "bulk")
    stop = threading.Event()

    def submitter() -> None:
        with psycopg.connect(dsn, autocommit=True) as c:
            while not stop.is_set():
                c.execute("select pgflight.submit_run('quiet', 'interactive', '{}')")
                time.sleep(0.02)

    def worker() -> None:
        with psycopg.connect(dsn, autocommit=True) as c:
            w = register(c, "q")
            while not stop.is_set():
                got = c.execute(
                    "select attempt_id, fencing_token from pgflight.claim_batch(%s, 10, 60)", [w]
                ).fetchall()
                if not got:
                    time.sleep(0.002)
                    continue
                c.execute(
                    "select count(*) from pgflight.complete_batch(%s, %s,"
                    " array_fill(null::jsonb, array[%s]))",
                    [[a for a, _ in got], [t for _, t in got], len(got)],
                )

    threads = [threading.Thread(target=submitter)] + [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    with psycopg.connect(dsn, autocommit=True) as c:
        waits = [
            float(r[0])
            for r in c.execute(
                "select extract(epoch from a.claimed_at - a.created_at) * 1000 from pgflight.step_attempts a"
                " where a.recipe = 'interactive' and a.claimed_at is not null"
            ).fetchall()
        ]
        bulk_done = c.execute(
            "select count(*) from pgflight.step_attempts where recipe = 'bulk' and status = 'succeeded'"
        ).fetchone()[0]  # type: ignore[index]
    return {
        "burst": burst,
        "quiet_steps": len(waits),
        "burst_steps_done": bulk_done,
        "wait_p50_ms": round(percentile(waits, 50), 2),
        "wait_p99_ms": round(percentile(waits, 99), 2),
    }


def rare_recipe(dsn: str, others: int, samples: int) -> dict[str, Any]:
    """claim_batch(1, ['rare']) latency with `others` steps of other recipes queued."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("truncate pgflight.events, pgflight.step_attempts, pgflight.steps, pgflight.runs cascade")
        c.execute("select pgflight.create_workspace('bench'), pgflight.create_workspace('other')")
        if others:
            spawn_backlog(c, "bench", others // 2, "common")
            spawn_backlog(c, "other", others - others // 2, "common")
        w = register(c, "rare")
        times = []
        for _ in range(samples):
            c.execute("select pgflight.submit_run('bench', 'rare', '{}')")
            t0 = time.perf_counter()
            got = c.execute(
                "select attempt_id, fencing_token from pgflight.claim_batch(%s, 1, 60, array['rare'])", [w]
            ).fetchall()
            times.append((time.perf_counter() - t0) * 1000)
            assert len(got) == 1
            c.execute("select pgflight.complete_step(%s, %s, null)", list(got[0]))
    return {
        "others_queued": others,
        "p50_ms": round(percentile(times, 50), 3),
        "p99_ms": round(percentile(times, 99), 3),
        "samples": samples,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the sizes")
    parser.add_argument("--only-claim-cost", action="store_true", help="part 1 only")
    parser.add_argument("--compare-to", help="also drain off/on_local/on deployed at this tag (@v0.3.0)")
    parser.add_argument("--rounds", type=int, default=1, help="claim-cost rounds (medians reported)")
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    report: dict[str, Any] = {
        "bench": "fairness",
        "quick": args.quick,
        "durability": "fsync=on synchronous_commit=on",
    }
    started = time.perf_counter()
    with throwaway_cluster() as (cluster, dsn):
        report["claim_cost"] = claim_cost(cluster, dsn, 20_000 // scale, args.compare_to, args.rounds)
        report["load_average"] = [round(x, 2) for x in os.getloadavg()]
        if args.only_claim_cost:
            json.dump(report, sys.stdout, indent=2)
            print()
            return
        none = quiet_tenant(dsn, 0, 10 / (2 if args.quick else 1))
        burst = quiet_tenant(dsn, 100_000 // scale, 20 / (2 if args.quick else 1))
        report["quiet_tenant"] = {
            "no_burst": none,
            "burst": burst,
            "p99_ratio": round(burst["wait_p99_ms"] / none["wait_p99_ms"], 2),
        }
        empty = rare_recipe(dsn, 0, 1000 // scale)
        full = rare_recipe(dsn, 200_000 // scale, 1000 // scale)
        report["rare_recipe"] = {
            "empty": empty,
            "queued": full,
            "p99_ratio": round(full["p99_ms"] / empty["p99_ms"], 2),
        }
    cc = report["claim_cost"]["on_vs_off"]
    report["targets"] = {
        "claim_p99_on_vs_off_le_1_3": cc["p99_ratio"] <= 1.3,
        "throughput_on_vs_off_ge_0_8": cc["throughput_ratio"] >= 0.8,
        "quiet_wait_p99_ratio_le_2": report["quiet_tenant"]["p99_ratio"] <= 2,
        "rare_recipe_p99_ratio_le_2": report["rare_recipe"]["p99_ratio"] <= 2,
    }
    report["elapsed_s"] = round(time.perf_counter() - started, 1)
    json.dump(report, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
