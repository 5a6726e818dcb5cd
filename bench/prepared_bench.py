"""
What server-side prepared statements would save on the worker's hot calls. Prints its
figures; not a test.

On a throwaway cluster (fsync and synchronous_commit on): for each of the worker's hot calls —
``claim_batch`` (started on claim) with ``complete_batch``, ``complete_and_claim``, ``heartbeat``
of 8 held attempts, ``claim_batch`` unstarted with ``start_step`` — --calls calls on a connection
without prepared statements (``prepare_threshold=None``, what the worker uses) and on one that
prepares from the first call (``prepare_threshold=0``), --rounds times, alternating which goes
first. Per call: the server backend's CPU (utime + stime from /proc; the bench runs on the
server's host) and the client's wall time; per mode the medians, and the saving.

--empty: the same calls with nothing to do (their fixed cost per call, less noisy).

Usage: python bench/prepared_bench.py [--calls 1000] [--rounds 3] [--batch 8] [--empty]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import psycopg
from benchlib import process_cpu_s, throwaway_cluster

from pgflight import db

Conn = psycopg.Connection[Any]


def _submit(conn: Conn, n: int) -> None:
    for start in range(0, n, 10_000):
        conn.execute(
            "select count(*) from pgflight.submit_runs('bench', (select jsonb_agg(jsonb_build_object("
            "'recipe', 'noop', 'input', '{}'::jsonb)) from generate_series(1, %s)), '{}')",
            [min(10_000, n - start)],
        )
    conn.execute("vacuum analyze pgflight.step_attempts")


def _held(conn: Conn, worker: int, batch: int) -> tuple[list[int], list[int]]:
    claims = db.claim_batch(conn, worker, batch_size=batch, lease_s=60, start=True)
    claims.sort(key=lambda c: c.attempt_id)
    return [c.attempt_id for c in claims], [c.fencing_token for c in claims]


def workloads(batch: int) -> dict[str, Callable[[Conn, int, int], int]]:
    """
    Each hot call as a function of (connection, worker id, calls) that makes about `calls`
    statements of it and returns how many statements it sent.
    """

    def claim_complete(conn: Conn, worker: int, calls: int) -> int:
        for _ in range(calls // 2):
            ids, tokens = _held(conn, worker, batch)
            db.complete_batch(conn, ids, tokens, [None] * len(ids))
        return calls // 2 * 2

    def combined(conn: Conn, worker: int, calls: int) -> int:
        ids, tokens = _held(conn, worker, batch)
        for _ in range(calls):
            _, claims = db.complete_and_claim(
                conn, worker, ids, tokens, [None] * len(ids), batch_size=batch, lease_s=60, recipes=["noop"]
            )
            claims.sort(key=lambda c: c.attempt_id)
            ids, tokens = [c.attempt_id for c in claims], [c.fencing_token for c in claims]
        db.complete_batch(conn, ids, tokens, [None] * len(ids))
        return calls + 2

    def heartbeat(conn: Conn, worker: int, calls: int) -> int:
        ids, tokens = _held(conn, worker, batch)
        for _ in range(calls):
            db.heartbeat(conn, worker, ids, tokens)
        db.complete_batch(conn, ids, tokens, [None] * len(ids))
        return calls + 2

    def start(conn: Conn, worker: int, calls: int) -> int:
        groups = max(1, calls // (batch + 2))
        for _ in range(groups):
            claims = db.claim_batch(conn, worker, batch_size=batch, lease_s=60)
            for c in claims:
                db.start_step(conn, c.attempt_id, c.fencing_token)
            db.complete_batch(
                conn, [c.attempt_id for c in claims], [c.fencing_token for c in claims], [None] * len(claims)
            )
        return groups * (batch + 2)

    return {
        "claim_batch + complete_batch": claim_complete,
        "complete_and_claim": combined,
        "heartbeat (8 held)": heartbeat,
        "claim_batch + start_step x8 + complete_batch": start,
    }


def empty_workloads() -> dict[str, Callable[[Conn, int, int], int]]:
    """
    The same calls with nothing to do (a recipe nothing is queued for, no attempts held): the
    call's fixed cost, of which parse and plan are a larger share, with less noise.
    """

    def repeat(call: Callable[[Conn, int], object]) -> Callable[[Conn, int, int], int]:
        def work(conn: Conn, worker: int, calls: int) -> int:
            for _ in range(calls):
                call(conn, worker)
            return calls

        return work

    return {
        "claim_batch (nothing ready)": repeat(
            lambda c, w: db.claim_batch(c, w, batch_size=8, lease_s=30, recipes=["nothing"], start=True)
        ),
        "complete_and_claim (nothing)": repeat(
            lambda c, w: db.complete_and_claim(
                c, w, [], [], [], batch_size=8, lease_s=30, recipes=["nothing"]
            )
        ),
        "complete_batch (empty)": repeat(lambda c, w: db.complete_batch(c, [], [], [])),
        "heartbeat (none held)": repeat(lambda c, w: db.heartbeat(c, w, [], [])),
    }


def measure(
    dsn: str, work: Callable[[Conn, int, int], int], calls: int, prepare: bool
) -> tuple[float, float]:
    """(server CPU ms per statement, client wall ms per statement) of about `calls` statements on a
    fresh connection."""
    with psycopg.connect(dsn, autocommit=True, prepare_threshold=0 if prepare else None) as conn:
        worker = db.register_worker(conn, f"bench-{time.monotonic_ns()}", recipes=["noop"])
        work(conn, worker, 20)  # warm: the functions' plans, the catalogue caches, prepared names
        pid = conn.info.backend_pid
        cpu0, t0 = process_cpu_s(pid), time.perf_counter()
        sent = work(conn, worker, calls)
        cpu1, t1 = process_cpu_s(pid), time.perf_counter()
        db.deregister_worker(conn, worker)
    return (cpu1 - cpu0) * 1000 / sent, (t1 - t0) * 1000 / sent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--empty", action="store_true", help="the calls with nothing to do (no queue needed)")
    args = ap.parse_args()
    loads = empty_workloads() if args.empty else workloads(args.batch)
    # jobs each round takes from the queue: the claiming workloads take about `batch` per call
    need = args.rounds * 2 * len(loads) * (args.calls + 60) * args.batch + 10_000
    report: dict[str, Any] = {"calls": args.calls, "rounds": args.rounds, "batch": args.batch}
    with throwaway_cluster() as (_, dsn):
        with psycopg.connect(dsn, autocommit=True) as conn:
            _submit(conn, 0 if args.empty else need)
        report["load_before"] = os.getloadavg()[0]
        for name, work in loads.items():
            got: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
            for r in range(args.rounds):
                for prepare in (False, True) if r % 2 == 0 else (True, False):
                    got[prepare].append(measure(dsn, work, args.calls, prepare))
            off = [statistics.median(x[i] for x in got[False]) for i in (0, 1)]
            on = [statistics.median(x[i] for x in got[True]) for i in (0, 1)]
            report[name] = {
                "unprepared: server CPU ms / statement, client wall ms / statement": [
                    round(v, 4) for v in off
                ],
                "prepared: server CPU ms / statement, client wall ms / statement": [round(v, 4) for v in on],
                "server CPU saved ms / statement": round(off[0] - on[0], 4),
                "rounds (server ms, unprepared / prepared)": [
                    [round(a[0], 4), round(b[0], 4)] for a, b in zip(got[False], got[True], strict=True)
                ],
            }
        report["load_after"] = os.getloadavg()[0]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
