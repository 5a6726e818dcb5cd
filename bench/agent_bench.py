#!/usr/bin/env python3
"""
Engine overhead per agent iteration, as the agent loop writes it: two transactions.

1. ``record_model_call`` with ``mark_tools``: two response blocks (text + tool_use), usage, cost,
   budget settlement, totals, and the tool call marked in flight;
2. ``complete_tool_calls``: the tool's result, and the admission of the next model call (iteration
   cap, wall-time caps, atomic USD reservation on the run, agent and workspace-day budgets, C24).

Once per attempt (not timed): ``begin_agent_run`` and the first call's ``reserve_budget``. Model
and tool time are excluded. Each configuration is timed on a warm connection:

- ``fsync``: the server's settings (synchronous_commit on): what the loop pays;
- ``sync_commit_off``: the same with ``synchronous_commit = off`` in the session, for comparison
  only (the loop does not use it: a lost commit could lose an admission or a tool's in-flight mark).

Also the median wall time of a one-row INSERT commit on the same server: two of them are the
floor of an iteration with fsync on.

Server time: with ``track_functions`` (set in the session; needs a superuser, else skipped), the
execution time of the two functions per iteration from ``pg_stat_user_functions`` (total_time:
the functions' own work, without parse, network or commit). Prints one JSON object; ms throughout.

    PGFLIGHT_DSN=postgresql://... python bench/agent_bench.py [--iterations 3000]

The DSN must name a database where pgflight is deployed (sqitch deploy); the bench writes a
workspace `agent-bench-<pid>` and its runs there.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from decimal import Decimal
from typing import Any

import psycopg

from pgflight import db
from pgflight.db import agent as adb

PER_AGENT = 20  # iterations per agent (under the default cap of 25)
EST_USD = Decimal("0.02")
ITERATION_FUNCTIONS = ("record_model_call", "complete_tool_calls")
USAGE = {
    "input_tokens": 2400,
    "output_tokens": 180,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 1800,
}


def _blocks(tid: str) -> list[dict[str, Any]]:
    return [
        {"type": "text", "text": "Looking at the next clause." * 4},
        {
            "type": "tool_use",
            "id": tid,
            "name": "read_lines",
            "input": {"path": "/usr/share/common-licenses/GPL-3", "start": 100, "count": 40},
        },
    ]


def _iterations(conn: psycopg.Connection[Any], ws: str, wid: int, n: int) -> list[float]:
    """Run `n` agent iterations (agents of PER_AGENT iterations); return each one's wall time in ms."""
    samples: list[float] = []
    while len(samples) < n:
        sub = db.submit_run(conn, ws, "agent", {"task": "bench"}, max_usd=1000)
        claim: list[Any] = []
        while not claim:
            claim = db.claim_batch(conn, wid, batch_size=1, lease_s=300, recipes=["agent"])
        att, tok = claim[0].attempt_id, claim[0].fencing_token
        db.start_step(conn, att, tok)
        run = adb.begin_agent_run(conn, att, tok, model="claude-sonnet-4-6", task="bench", max_usd=500)
        if not run.created:  # a step some earlier client left (claimed again after its lease): end it
            db.complete_step(conn, att, tok, {"answer": "bench"})
            continue
        adb.reserve_budget(conn, att, tok, run.agent_run_id, 1, EST_USD)
        for it in range(1, PER_AGENT + 1):
            tid = f"toolu_{sub.run_id}_{it}"
            t0 = time.perf_counter()
            rec = adb.record_model_call(
                conn,
                att,
                tok,
                run.agent_run_id,
                it,
                _blocks(tid),
                USAGE,
                "claude-sonnet-4-6",
                stop_reason="tool_use",
                mark_tools=True,
            )
            assert rec.marked == [tid], rec
            adb.complete_tool_calls(
                conn,
                att,
                tok,
                run.agent_run_id,
                [{"type": "tool_result", "tool_use_id": tid, "content": "line\n" * 40}],
                next_iteration=it + 1,
                est_usd=EST_USD,
            )
            samples.append((time.perf_counter() - t0) * 1000)
            if len(samples) >= n:
                break
        db.complete_step(conn, att, tok, {"answer": "bench"})
    return samples


def _function_ms(conn: psycopg.Connection[Any]) -> dict[str, tuple[int, float]]:
    """(calls, total ms) per pgflight function, from the shared statistics."""
    conn.execute("select pg_stat_clear_snapshot()")
    rows = conn.execute(
        "select funcname, calls, total_time from pg_stat_user_functions where schemaname = 'pgflight'"
    ).fetchall()
    return {r[0]: (int(r[1]), float(r[2])) for r in rows}


def _measure(dsn: str, ws: str, wid: int, iterations: int, warmup: int, sync_commit: str) -> dict[str, Any]:
    tracked = False
    with psycopg.connect(dsn, autocommit=True, prepare_threshold=None) as conn:
        conn.execute("select set_config('synchronous_commit', %s, false)", [sync_commit])
        try:
            conn.execute("set track_functions = 'pl'")
            tracked = True
        except psycopg.errors.InsufficientPrivilege:
            pass
        _iterations(conn, ws, wid, warmup)
        if tracked:  # let the session flush its pending statistics (at most once a second, when idle)
            time.sleep(1.2)
            conn.execute("select 1")
            time.sleep(0.1)
            before = _function_ms(conn)
        samples = _iterations(conn, ws, wid, iterations)
    out: dict[str, Any] = {"synchronous_commit": sync_commit, **_wall(samples)}
    if tracked:
        with psycopg.connect(dsn, autocommit=True) as reader:  # the bench session has exited: flushed
            after = {}
            for _ in range(20):
                after = _function_ms(reader)
                if (
                    after.get("record_model_call", (0, 0.0))[0] - before.get("record_model_call", (0, 0.0))[0]
                    >= iterations
                ):
                    break
                time.sleep(0.1)
        per_call = {}
        for f in ITERATION_FUNCTIONS:
            calls = after.get(f, (0, 0.0))[0] - before.get(f, (0, 0.0))[0]
            total = after.get(f, (0, 0.0))[1] - before.get(f, (0, 0.0))[1]
            per_call[f] = round(total / calls, 4) if calls else None
        out["server_ms_per_call"] = per_call
        out["server_ms_per_iteration"] = round(sum(v for v in per_call.values() if v is not None), 4)
    return out


def _wall(samples: list[float]) -> dict[str, Any]:
    samples = sorted(samples)
    q = statistics.quantiles(samples, n=100)
    return {
        "iterations": len(samples),
        "p50_ms": round(q[49], 3),
        "p99_ms": round(q[98], 3),
        "mean_ms": round(statistics.fmean(samples), 3),
        "max_ms": round(samples[-1], 3),
    }


def _commit_ms(dsn: str, n: int = 500) -> float:
    """Median wall time (ms) of a one-row INSERT commit on this server: the ceiling per transaction."""
    with psycopg.connect(dsn, autocommit=True, prepare_threshold=None) as conn:
        conn.execute("create table if not exists public.pgflight_bench_commit (x int)")
        try:
            times = []
            for i in range(n):
                t0 = time.perf_counter()
                conn.execute("insert into public.pgflight_bench_commit values (%s)", [i])
                times.append((time.perf_counter() - t0) * 1000)
        finally:
            conn.execute("drop table public.pgflight_bench_commit")
    return round(statistics.median(times), 3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dsn", default=os.environ.get("PGFLIGHT_DSN"))
    ap.add_argument("--iterations", type=int, default=3000)
    ap.add_argument("--warmup", type=int, default=200)
    a = ap.parse_args()
    if not a.dsn:
        raise SystemExit("set PGFLIGHT_DSN or pass --dsn")
    with psycopg.connect(a.dsn, autocommit=True, prepare_threshold=None) as conn:
        ws = f"agent-bench-{os.getpid()}"
        db.create_workspace(conn, ws, daily_usd_cap=1_000_000)
        wid = db.register_worker(conn, "agent-bench")
    commit_ms = _commit_ms(a.dsn)
    fsync = _measure(a.dsn, ws, wid, a.iterations, a.warmup, "on")
    async_ = _measure(a.dsn, ws, wid, a.iterations, a.warmup, "off")
    print(
        json.dumps(
            {
                "bench": "agent_iteration_overhead",
                "transactions_per_iteration": 2,
                "single_row_commit_p50_ms": commit_ms,
                "calls_per_iteration": list(ITERATION_FUNCTIONS),
                "fsync": fsync,
                "sync_commit_off": async_,
                "target_p99_ms": 2.0,
                "meets_target": fsync["p99_ms"] < 2.0,
            }
        )
    )


if __name__ == "__main__":
    main()
