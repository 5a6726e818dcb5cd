"""
Soak under a held snapshot (scenario C49): claim p99 and dead tuples over time.

On a throwaway cluster (fsync on, autovacuum at its defaults), for --minutes:
  - a producer submits --rate no-op runs per second (in batches of ten);
  - --workers claimers claim_batch(10, start) and complete_batch them, timing every claim;
  - --held attempts of a slow recipe stay leased, heartbeated every 2 s (the churn of C49);
  - the sweeps run as installed: CALL sweep_loop(60, 5) each minute;
  - one session opens a REPEATABLE READ transaction, reads a table (its snapshot pins the xmin
    horizon) and holds it from --hold-from to --hold-until (fractions of the run; the issue's
    30-minute soak holds it for 10 minutes: 1/6 .. 1/2).
Every --sample seconds it prints a JSON line: claim p50/p99 (ms) of the window, steps/s, the dead
tuples of step_attempts, steps and runs, and what engine_health reports (the oldest xmin's age and
seconds held, sweep lag). At the end, one JSON document: the samples, and p99 and dead tuples
before, during and after the hold.

Usage: python bench/soak_bench.py [--minutes 30] [--rate 200] [--workers 2]
The default run takes 30 minutes plus ~1 minute of setup; --minutes 3 is the quick form.
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
from benchlib import percentile, register, throwaway_cluster
from psycopg.types.json import Jsonb

START = Jsonb({"start": True})
HOT = ("step_attempts", "steps", "runs")


class Clock:
    """Claim latencies and completed steps since the last sample, shared by the threads."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds
        self.lock = threading.Lock()
        self.claims_ms: list[float] = []
        self.done = 0
        self.stop = threading.Event()

    def take(self) -> tuple[list[float], int]:
        with self.lock:
            got, n = self.claims_ms, self.done
            self.claims_ms, self.done = [], 0
        return got, n


def producer(dsn: str, rate: float, clock: Clock) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        t = time.perf_counter()
        while not clock.stop.is_set():
            c.execute("select pgflight.submit_run('bench', 'noop', '{}') from generate_series(1, 10)")
            t += 10 / rate
            time.sleep(max(0.0, t - time.perf_counter()))


def claimer(dsn: str, i: int, clock: Clock) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        w = register(c, f"soak-{i}")
        while not clock.stop.is_set():
            t = time.perf_counter()
            got = c.execute(
                "select attempt_id, fencing_token from pgflight.claim_batch(%s, 10, 60, array['noop'], %s)",
                [w, START],
            ).fetchall()
            ms = (time.perf_counter() - t) * 1000
            if got:
                c.execute(
                    "select count(*) from pgflight.complete_batch(%s, %s,"
                    " array_fill(null::jsonb, array[%s]))",
                    [[a for a, _ in got], [t for _, t in got], len(got)],
                )
            with clock.lock:
                clock.claims_ms.append(ms)
                clock.done += len(got)
            if not got:
                time.sleep(0.02)


def heartbeater(dsn: str, held: int, clock: Clock) -> None:
    """`held` attempts of the slow recipe stay leased, heartbeated every 2 s."""
    with psycopg.connect(dsn, autocommit=True) as c:
        w = register(c, "soak-slow")
        c.execute("select pgflight.submit_run('bench', 'slow', '{}') from generate_series(1, %s)", [held])
        got = c.execute(
            "select attempt_id, fencing_token from pgflight.claim_batch(%s, %s, 30, array['slow'], %s)",
            [w, held, START],
        ).fetchall()
        ids, tokens = [a for a, _ in got], [t for _, t in got]
        while not clock.stop.wait(2):
            c.execute("select count(*) from pgflight.heartbeat(%s, %s, %s)", [w, ids, tokens])


def sweeper(dsn: str, clock: Clock) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        while not clock.stop.is_set():
            c.execute("call pgflight.sweep_loop(%s, 5)", [min(60.0, max(1.0, clock.end - time.monotonic()))])


def holder(dsn: str, start_s: float, end_s: float, clock: Clock) -> None:
    if clock.stop.wait(start_s):
        return
    with psycopg.connect(dsn, autocommit=False) as c:
        c.execute("set transaction isolation level repeatable read")
        c.execute("select 1 from pgflight.runs limit 1")
        clock.stop.wait(max(0.0, end_s - start_s))
        c.rollback()


def sample(c: psycopg.Connection[Any], clock: Clock, t0: float, window: float, phase: str) -> dict[str, Any]:
    lat, n = clock.take()
    c.execute("select pg_stat_clear_snapshot()")
    dead = dict(
        c.execute(  # type: ignore[arg-type]
            "select relname, n_dead_tup from pg_stat_user_tables"
            " where schemaname = 'pgflight' and relname = any(%s)",
            [list(HOT)],
        ).fetchall()
    )
    h = c.execute(
        "select oldest_xmin_age, oldest_xmin_held_s, sweep_lag_s from pgflight.engine_health"
    ).fetchone()
    assert h is not None
    return {
        "t_s": round(time.monotonic() - t0),
        "phase": phase,
        "load_avg": round(os.getloadavg()[0], 1),
        "steps_per_s": round(n / window, 1),
        "claims": len(lat),
        "claim_p50_ms": round(percentile(lat, 50), 2) if lat else None,
        "claim_p99_ms": round(percentile(lat, 99), 2) if lat else None,
        "dead": {k: int(v) for k, v in dead.items()},
        "oldest_xmin_age": h[0],
        "oldest_xmin_held_s": round(float(h[1]), 1) if h[1] is not None else None,
        "sweep_lag_s": round(float(h[2]), 1) if h[2] is not None else None,
    }


def summary(samples: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for phase in ("before", "held", "after"):
        got = [s for s in samples if s["phase"] == phase and s["claim_p99_ms"] is not None]
        if got:
            out[phase] = {
                "samples": len(got),
                "claim_p99_ms_max": max(s["claim_p99_ms"] for s in got),
                "claim_p99_ms_last": got[-1]["claim_p99_ms"],
                "dead_step_attempts_max": max(s["dead"].get("step_attempts", 0) for s in got),
                "dead_step_attempts_last": got[-1]["dead"].get("step_attempts", 0),
                "steps_per_s_mean": round(sum(s["steps_per_s"] for s in got) / len(got), 1),
            }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--rate", type=float, default=200, help="runs submitted per second")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--held", type=int, default=200, help="attempts kept leased and heartbeated")
    ap.add_argument("--hold-from", type=float, default=1 / 6, help="fraction of the run")
    ap.add_argument("--hold-until", type=float, default=1 / 2, help="fraction of the run")
    ap.add_argument("--sample", type=float, default=None, help="seconds (default: run / 18, at least 10)")
    a = ap.parse_args()
    total = a.minutes * 60
    window = a.sample or max(10.0, total / 18)
    hold = (total * a.hold_from, total * a.hold_until)
    report: dict[str, Any] = {
        "bench": "soak (C49)",
        "durability": "fsync=on synchronous_commit=on",
        "cpus": os.cpu_count(),
        "minutes": a.minutes,
        "rate": a.rate,
        "workers": a.workers,
        "held_leases": a.held,
        "snapshot_held_s": [round(hold[0]), round(hold[1])],
    }
    with throwaway_cluster() as (_cluster, dsn):
        clock = Clock(total)
        threads = [
            threading.Thread(target=producer, args=(dsn, a.rate, clock)),
            threading.Thread(target=heartbeater, args=(dsn, a.held, clock)),
            threading.Thread(target=sweeper, args=(dsn, clock)),
            threading.Thread(target=holder, args=(dsn, hold[0], hold[1], clock)),
            *(threading.Thread(target=claimer, args=(dsn, i, clock)) for i in range(a.workers)),
        ]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        samples = []
        with psycopg.connect(dsn, autocommit=True) as c:
            while (elapsed := time.monotonic() - t0) < total:
                time.sleep(min(window, total - elapsed))
                now = time.monotonic() - t0
                phase = "before" if now <= hold[0] else "held" if now <= hold[1] + window / 2 else "after"
                samples.append(sample(c, clock, t0, window, phase))
                print(json.dumps(samples[-1]), file=sys.stderr, flush=True)
        clock.stop.set()
        for t in threads:
            t.join(90)
    report["summary"] = summary(samples)
    report["samples"] = samples
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
