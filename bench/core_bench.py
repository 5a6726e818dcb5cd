"""
Core benchmark of the SQL engine (the performance targets in docs/benchmarks.md). Prints one JSON
document; not a test.

On a throwaway cluster with fsync and synchronous_commit on (every commit waits for its WAL flush):

1. ceiling: pgbench, one single-row UPDATE per transaction, at 1, 4 and 16 connections: the
   machine's single-row-commit rate (tps).
2. pipeline: no-op steps through submit -> claim_batch (with its start option: claimed straight
   into running) -> complete at 1, 4 and 16 connections, one step per call (3 commits per step)
   and batched by ten (one submit_runs of 10, one claim_batch(10), one complete_batch of 10: 0.3
   commits per step): steps/s,
   the ratio to the ceiling at the same connection count, commits per step (pg_stat_database
   xact_commit delta), WAL bytes per step (pg_current_wal_lsn delta).
3. claim latency: claim_batch(1) p50/p99 with 10 thousand and with 1 million finished steps in the
   tables (bulk-loaded with generate_series straight into the tables as superuser, then VACUUM
   ANALYZE), target p99 within 2x.

With --compare @v0.3.0: that tag deployed into a second database of the same cluster, and the
pipeline run on it and on HEAD one after the other at each batch size and connection count
(rows carry "schema"), against the same ceiling; the claim latency part is skipped. Quick: about
two minutes.

Usage: python bench/core_bench.py [--quick] [--compare @v0.3.0]
       (--quick: shorter runs, 100 thousand rows not 1 million)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import psycopg
from benchlib import (
    CONNECTIONS,
    Conn,
    deploy_ref,
    percentile,
    pgbench_ceiling,
    register,
    run_threads,
    stats_settled,
    throwaway_cluster,
)
from psycopg.types.json import Jsonb

# claim_batch's start option: claimed straight into running, as the Python worker does (the
# separate start_step call would add one commit per step and change nothing else).
START = Jsonb({"start": True})


def _pipeline_body(dsn: str, seconds: float, batch: int) -> Any:
    """
    A thread's loop: submit `batch` no-op steps, claim (and start) them, complete them; until time is up.
    """

    def body(i: int) -> int:
        done = 0
        with psycopg.connect(dsn, autocommit=True) as c:
            w = register(c, f"bench-{i}")
            recipe = [f"noop{i}"]  # each thread claims its own steps, so the loop never starves
            end = time.perf_counter() + seconds
            while time.perf_counter() < end:
                if batch == 1:
                    c.execute("select pgflight.submit_run('bench', %s, '{}')", [recipe[0]])
                    got = c.execute(
                        "select attempt_id, fencing_token from pgflight.claim_batch(%s, 1, 60, %s, %s)",
                        [w, recipe, START],
                    ).fetchall()
                    for a, t in got:
                        c.execute("select pgflight.complete_step(%s, %s, null)", [a, t])
                else:
                    c.execute(  # the bulk submit: one submit_runs call per batch
                        "select count(*) from pgflight.submit_runs('bench', (select"
                        " jsonb_agg(jsonb_build_object('recipe', %s::text)) from generate_series(1, %s)))",
                        [recipe[0], batch],
                    )
                    got = c.execute(
                        "select attempt_id, fencing_token from pgflight.claim_batch(%s, %s, 60, %s, %s)",
                        [w, batch, recipe, START],
                    ).fetchall()
                    ids, tokens = [a for a, _ in got], [t for _, t in got]
                    c.execute(
                        "select count(*) from pgflight.complete_batch(%s, %s,"
                        " array_fill(null::jsonb, array[%s]))",
                        [ids, tokens, len(ids)],
                    )
                done += len(got)
        return done

    return body


def pipeline(dsns: dict[str, str], seconds: float, ceiling: dict[int, float]) -> list[dict[str, Any]]:
    """
    Steps/s, commits per step and WAL bytes per step of the no-op pipeline, for each database of
    `dsns` (schema name -> DSN) in turn at each batch size and connection count, so side-by-side
    figures are taken moments apart.
    """
    results = []
    for batch in (1, 10):
        for n in CONNECTIONS:
            for schema, dsn in dsns.items():
                with psycopg.connect(dsn, autocommit=True) as obs:
                    before = stats_settled(obs)
                    steps, wall = run_threads(n, _pipeline_body(dsn, seconds, batch))
                    after = stats_settled(obs)
                rate = steps / wall
                results.append(
                    {
                        "schema": schema,
                        "connections": n,
                        "batch": batch,
                        "steps": steps,
                        "seconds": round(wall, 2),
                        "steps_per_s": round(rate, 1),
                        "ratio_to_ceiling": round(rate / ceiling[n], 3),
                        "commits_per_step": round((after.commits - before.commits) / max(steps, 1), 3),
                        "wal_bytes_per_step": round((after.wal_lsn - before.wal_lsn) / max(steps, 1)),
                    }
                )
                print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    return results


def bulk_load_finished(conn: Conn, rows: int) -> None:
    """
    Insert `rows` finished runs (one succeeded step, attempt and 3 events each) straight into the tables.
    """
    conn.execute("select set_config('pgflight.fake_now', '', false)")
    ws = conn.execute("select id from pgflight.workspaces where name = 'bench'").fetchone()
    assert ws is not None
    chunk = 200_000
    for lo in range(0, rows, chunk):
        n = min(chunk, rows - lo)
        conn.execute(
            """
            with r as (
              insert into pgflight.runs (workspace_id, recipe, status, input_hash, finished_at, created_at)
              select %s, 'old', 'succeeded', 'x', now() - interval '1 hour', now() - interval '2 hours'
                from generate_series(1, %s)
              returning id
            ), s as (
              insert into pgflight.steps (run_id, step_key, recipe, input, max_attempts)
              select r.id, 'root', 'old', '{}', 3 from r
              returning id, run_id
            ), a as (
              insert into pgflight.step_attempts (step_id, run_id, attempt_no, recipe, status,
                                                  available_after, worker_id, fencing_token, claimed_at,
                                                  started_at, lease_expires_at,
                                                  finished_at, lease_s)
              select s.id, s.run_id, 1, 'old', 'succeeded', now() - interval '2 hours', 1, s.id,
                     now() - interval '2 hours', now() - interval '2 hours', now() - interval '1 hour',
                     now() - interval '1 hour', 60
                from s
              returning id, step_id, run_id
            )
            insert into pgflight.events (run_id, step_id, attempt_id, from_status, to_status, reason)
            select a.run_id, a.step_id, a.id, f, t, w
              from a, (values (null, 'queued', 'queued'), ('queued', 'claimed', 'claimed'),
                              ('claimed', 'succeeded', 'succeeded')) v(f, t, w)
        """,
            [ws[0], n],
        )
    conn.execute("vacuum analyze pgflight.runs, pgflight.steps, pgflight.step_attempts, pgflight.events")


def claim_latency(dsn: str, samples: int) -> dict[str, float]:
    """claim_batch(1) latency in ms (p50, p99) with one ready step at a time; submit and complete untimed."""
    times = []
    with psycopg.connect(dsn, autocommit=True) as c:
        w = register(c, "latency")
        for _ in range(samples):
            c.execute("select pgflight.submit_run('bench', 'lat', '{}')")
            t0 = time.perf_counter()
            got = c.execute(
                "select attempt_id, fencing_token from pgflight.claim_batch(%s, 1, 60, array['lat'])", [w]
            ).fetchall()
            times.append((time.perf_counter() - t0) * 1000)
            c.execute("select pgflight.complete_step(%s, %s, null)", list(got[0]))
    return {
        "p50_ms": round(percentile(times, 50), 3),
        "p99_ms": round(percentile(times, 99), 3),
        "samples": samples,
    }


def finished_steps(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as c:
        row = c.execute("select count(*) from pgflight.step_attempts where status = 'succeeded'").fetchone()
        assert row is not None
        return int(row[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="shorter runs, 100 thousand rows instead of 1 million"
    )
    parser.add_argument(
        "--compare",
        metavar="REF",
        help="also deploy schema REF (a sqitch tag such as @v0.3.0) into a second database of the same"
        " cluster and run the pipeline on both, alternately, against one ceiling (skips the claim latency)",
    )
    args = parser.parse_args()
    seconds = 3 if args.quick else 10
    large = 100_000 if args.quick else 1_000_000
    samples = 1000 if args.quick else 3000
    report: dict[str, Any] = {
        "bench": "core",
        "quick": args.quick,
        "durability": "fsync=on synchronous_commit=on",
    }
    started = time.perf_counter()
    with throwaway_cluster() as (cluster, dsn):
        with psycopg.connect(dsn, autocommit=True) as c:
            report["server"] = c.execute("show server_version").fetchone()[0]  # type: ignore[index]
        ceiling = pgbench_ceiling(cluster, dsn, seconds)
        report["ceiling_tps"] = ceiling
        dsns = {"head": dsn}
        if args.compare:
            dsns = {args.compare: deploy_ref(cluster, args.compare), "head": dsn}
            report["compare"] = args.compare
        report["pipeline"] = pipeline(dsns, seconds, ceiling)
        if args.compare:
            report["total_s"] = round(time.perf_counter() - started, 1)
            print(json.dumps(report, indent=2))
            return
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(
                "truncate pgflight.events, pgflight.step_attempts, pgflight.steps, pgflight.runs cascade"
            )
            bulk_load_finished(c, 10_000)
        small = claim_latency(dsn, samples)
        small["finished_rows"] = finished_steps(dsn)
        with psycopg.connect(dsn, autocommit=True) as c:
            t0 = time.perf_counter()
            bulk_load_finished(c, large - 10_000)
            report["bulk_load_s"] = round(time.perf_counter() - t0, 1)
        big = claim_latency(dsn, samples)
        big["finished_rows"] = finished_steps(dsn)
        report["claim_latency"] = {
            "small": small,
            "large": big,
            "p99_ratio_large_to_small": round(big["p99_ms"] / small["p99_ms"], 2),
        }
    best_batched = max(r["ratio_to_ceiling"] for r in report["pipeline"] if r["batch"] == 10)
    report["targets"] = {
        "throughput_at_least_half_the_ceiling": best_batched >= 0.5,
        "best_batched_ratio": best_batched,
        "claim_p99_within_2x": report["claim_latency"]["p99_ratio_large_to_small"] <= 2,
    }
    report["total_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
