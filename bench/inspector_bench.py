"""
Page load times of the run inspector and the cost of the metrics read, on a database holding
--runs runs (default 100,000: 98 % succeeded, 1 % failed with a dead letter, 1 % queued) plus the
four runs of the inspector tests (a fan-out, a dead letter, a parked approval, an agent run with
an interrupted tool call).

    .venv/bin/python bench/inspector_bench.py [--runs 100000] [--repeat 20]

Prints, per page, the median and 95th percentile of the server's answer time (HTTP GET on
127.0.0.1, a whole page read) and its size; then the median time of `metrics_snapshot` in steady
state (cursor at the end of the events log) and catching up (cursor 0, at most 100,000 events).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import psycopg

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests_py")]

from benchlib import claim_complete_loop, percentile, register, throwaway_cluster  # noqa: E402

import inspector_support as scenario  # noqa: E402
from inspector_browser import serve_in_thread  # noqa: E402


def fill(dsn: str, runs: int) -> dict[str, int]:
    """The scenario, then `runs` runs: most succeeded, 1 % dead-lettered, 1 % left queued."""
    with psycopg.connect(dsn, autocommit=True) as c:
        built = scenario.build(c)
        failed, queued = runs // 100, runs // 100
        t0 = time.perf_counter()
        c.execute(
            "select pgflight.submit_run('globex', 'noop', jsonb_build_object('i', g),"
            " jsonb_build_object('idempotency_key', 'k-' || g)) from generate_series(1, %s) g",
            [runs - failed - queued],
        )
        claim_complete_loop(dsn, "bench-filler", ["noop"], 1000)
        c.execute(
            "select pgflight.submit_run('acme', 'fatal', '{}', '{\"max_attempts\": 1}')"
            " from generate_series(1, %s)",
            [failed],
        )
        w = register(c, "bench-failer")
        while got := c.execute(
            "select attempt_id, fencing_token from pgflight.claim_batch(%s, 500, 60, array['fatal'])", [w]
        ).fetchall():
            for attempt_id, token in got:
                c.execute(
                    'select pgflight.fail_step(%s, %s, \'{"message": "boom"}\', \'{"retryable": false}\')',
                    [attempt_id, token],
                )
        c.execute("select pgflight.submit_run('acme', 'later', '{}') from generate_series(1, %s)", [queued])
        c.execute("vacuum analyze")
        print(f"filled {runs:,} runs in {time.perf_counter() - t0:.1f} s", flush=True)
        newest = c.execute("select max(run_id) from pgflight.run_list").fetchone()
        assert newest is not None
        return {"agent_step": built.agent_step, "agent_run": built.agent_run, "newest": int(newest[0])}


def timed_get(url: str, repeat: int) -> tuple[float, float, int]:
    times, size = [], 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        with urllib.request.urlopen(url, timeout=60) as r:
            size = len(r.read())
            assert r.status == 200, url
        times.append(time.perf_counter() - t0)
    return statistics.median(times), percentile(times, 95), size


def metrics_cost(dsn: str, repeat: int) -> tuple[float, float, int]:
    with psycopg.connect(dsn, autocommit=True) as c:
        last = c.execute("select max(id) from pgflight.run_events").fetchone()
        assert last is not None
        events = int(last[0])

        def run(cursor: int) -> float:
            times = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                c.execute("select * from pgflight.metrics_snapshot(%s, 100000)", [cursor]).fetchall()
                times.append(time.perf_counter() - t0)
            return statistics.median(times)

        return run(events), run(0), events


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    with throwaway_cluster() as (_, dsn):
        ids: dict[str, Any] = fill(dsn, args.runs)
        served = serve_in_thread(scenario.login_dsn(dsn, scenario.READER))
        pages = {
            "runs (newest page)": "/runs",
            "runs, page 2 (keyset)": f"/runs?after={ids['newest'] - 49}",
            "runs, deep page (keyset)": f"/runs?after={args.runs // 2}",
            "runs ?status=queued": "/runs?status=queued",
            "runs ?status=failed": "/runs?status=failed",
            "runs ?workspace=acme": "/runs?workspace=acme",
            "runs ?key=k-4242": "/runs?key=k-4242",
            "run (agent)": f"/runs/{ids['agent_run']}",
            "step (agent)": f"/steps/{ids['agent_step']}",
            "transcript": f"/steps/{ids['agent_step']}/transcript",
            "diff": f"/steps/{ids['agent_step']}/diff",
            "dead letters": "/dead-letters",
            "approvals": "/approvals",
            "workers": "/workers",
            "queues": "/queues",
            "costs": "/costs",
            "metrics": "/metrics",
        }
        try:
            print(f"\n{'page':<28} {'median ms':>10} {'p95 ms':>10} {'bytes':>10}")
            for name, path in pages.items():
                med, p95, size = timed_get(served.url + path, args.repeat)
                print(f"{name:<28} {med * 1000:>10.1f} {p95 * 1000:>10.1f} {size:>10,}", flush=True)
        finally:
            served.stop()
        steady, catch_up, events = metrics_cost(dsn, args.repeat)
        print(f"\nmetrics_snapshot over {events:,} events:")
        print(f"  steady state (cursor at the end): {steady * 1000:.1f} ms median")
        print(f"  catching up (cursor 0, 100,000 events per call): {catch_up * 1000:.1f} ms median")


if __name__ == "__main__":
    main()
