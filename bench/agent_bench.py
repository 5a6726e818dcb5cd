#!/usr/bin/env python3
"""
Engine overhead per agent iteration: the budget check (reserve_budget: caps, wall time, atomic USD
admission on the run, agent and workspace-day budgets), record_model_call (two response blocks,
usage, cost, settlement, totals) and the two tool trace writes (mark_tool_call in_flight,
complete_tool_call). Model and tool time are excluded. Prints JSON: p50 / p99 / mean in ms.

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

import psycopg

from pgflight import db
from pgflight.db import agent as adb

PER_AGENT = 20  # iterations per agent (under the default cap of 25)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dsn", default=os.environ.get("PGFLIGHT_DSN"))
    ap.add_argument("--iterations", type=int, default=3000)
    ap.add_argument("--warmup", type=int, default=200)
    a = ap.parse_args()
    if not a.dsn:
        raise SystemExit("set PGFLIGHT_DSN or pass --dsn")
    conn = psycopg.connect(a.dsn, autocommit=True, prepare_threshold=None)
    ws = f"agent-bench-{os.getpid()}"
    db.create_workspace(conn, ws, daily_usd_cap=1_000_000)
    wid = db.register_worker(conn, "agent-bench")
    blocks = lambda tid: [
        {"type": "text", "text": "Looking at the next clause." * 4},  # noqa: E731
        {
            "type": "tool_use",
            "id": tid,
            "name": "read_lines",
            "input": {"path": "/usr/share/common-licenses/GPL-3", "start": 100, "count": 40},
        },
    ]
    usage = {
        "input_tokens": 2400,
        "output_tokens": 180,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 1800,
    }
    samples: list[float] = []
    total = a.iterations + a.warmup
    done = 0
    while done < total:
        sub = db.submit_run(conn, ws, "agent", {"task": "bench"}, max_usd=1000)
        claim = []
        while not claim:
            claim = db.claim_batch(conn, wid, batch_size=1, lease_s=300, recipes=["agent"])
        c = claim[0]
        att, tok = c.attempt_id, c.fencing_token
        db.start_step(conn, att, tok)
        run = adb.begin_agent_run(conn, att, tok, model="claude-sonnet-4-6", task="bench", max_usd=500)
        for it in range(1, PER_AGENT + 1):
            tid = f"toolu_{sub.run_id}_{it}"
            t0 = time.perf_counter()
            adb.reserve_budget(conn, att, tok, run.agent_run_id, it, Decimal("0.02"))
            adb.record_model_call(
                conn,
                att,
                tok,
                run.agent_run_id,
                it,
                blocks(tid),
                usage,
                "claude-sonnet-4-6",
                stop_reason="tool_use",
            )
            adb.mark_tool_call(conn, att, tok, run.agent_run_id, tid)
            adb.complete_tool_call(
                conn,
                att,
                tok,
                run.agent_run_id,
                tid,
                {"type": "tool_result", "tool_use_id": tid, "content": "line\n" * 40},
            )
            dt = (time.perf_counter() - t0) * 1000
            done += 1
            if done > a.warmup:
                samples.append(dt)
            if done >= total:
                break
        db.complete_step(conn, att, tok, {"answer": "bench"})
    samples.sort()
    q = statistics.quantiles(samples, n=100)
    print(
        json.dumps(
            {
                "bench": "agent_iteration_overhead",
                "iterations": len(samples),
                "calls_per_iteration": 4,
                "p50_ms": round(q[49], 3),
                "p99_ms": round(q[98], 3),
                "mean_ms": round(statistics.fmean(samples), 3),
                "max_ms": round(samples[-1], 3),
                "target_p99_ms": 2.0,
                "meets_target": q[98] < 2.0,
            }
        )
    )


if __name__ == "__main__":
    main()
