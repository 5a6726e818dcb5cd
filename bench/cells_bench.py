#!/usr/bin/env python3
"""
Cells behind PL/Proxy (docs/scaling.md) against one cell reached directly, on this machine.

Starts three throwaway servers (one cell each) and three proxy databases on the first server: one
in front of cell 1, one in front of cells 1-2, one in front of cells 1-3. Everything as the
worker login over scram on TCP.

1. Per-call latency, direct on cell 1 vs through the three-cell proxy, in alternating rounds
   (median microseconds): ``_now()`` (any cell), ``run_status(id)`` (routed by the id's cell),
   ``heartbeat`` of one attempt (split by element), ``claim_batch`` with nothing ready (the
   rotation over every cell, with the skip it learns).
2. Burn-down: ``--runs`` runs of a no-op step, one client looping claim_batch(50) +
   complete_batch, directly on cell 1 and through the proxy with 1, 2 and 3 cells (the runs split
   evenly between the cells). All cells share this machine's cores, so this measures the proxy's
   overhead, not the speed-up of more cells: on separate machines each cell adds its own
   capacity.

    python bench/cells_bench.py [--runs 3000] [--calls 300] [--rounds 3]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import psycopg

from pgflight import cells

LOGINS = {"pgf_bench_worker": "pgflight_worker"}
PASSWORD = "cells-bench-password"
SETTINGS = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "log_min_messages": "warning",
}


def _timed(conn: psycopg.Connection[Any], query: str, params: Any, n: int) -> float:
    """Median microseconds of `n` executions."""
    out = []
    for _ in range(n):
        t = time.perf_counter()
        conn.execute(query, params).fetchall()
        out.append((time.perf_counter() - t) * 1e6)
    return statistics.median(out)


def per_call(direct: str, proxy: str, su_cell1: str, calls: int, rounds: int) -> dict[str, Any]:
    with psycopg.connect(su_cell1, autocommit=True) as su:
        su.execute("select pgflight.create_workspace('bench-calls')")
        run = su.execute("select run_id from pgflight.submit_run('bench-calls', 'held', '{}')").fetchone()
        assert run is not None
    res: dict[str, dict[str, list[float]]] = {}
    with psycopg.connect(proxy, autocommit=True) as p, psycopg.connect(direct, autocommit=True) as d:
        wid = p.execute("select pgflight.register_worker('bench-calls')").fetchone()[0]  # type: ignore[index]
        a, t = p.execute(
            "select attempt_id, fencing_token from pgflight.claim_batch(%s, 1, 3600, array['held'])", [wid]
        ).fetchone()  # type: ignore[misc]
        cases = {
            "_now": ("select pgflight._now()", None),
            "run_status": ("select * from pgflight.run_status(%s)", [run[0]]),
            "heartbeat_1": ("select * from pgflight.heartbeat(%s, %s, %s)", [wid, [a], [t]]),
            "claim_batch_empty": ("select * from pgflight.claim_batch(%s, 10, 30, array['none'])", [wid]),
        }
        for name, (q, params) in cases.items():
            for c in (d, p):
                _timed(c, q, params, 20)  # warm
            for _ in range(rounds):
                res.setdefault(name, {}).setdefault("direct", []).append(_timed(d, q, params, calls))
                res[name].setdefault("proxy", []).append(_timed(p, q, params, calls))
    out = {}
    for name, r in res.items():
        dm, pm = statistics.median(r["direct"]), statistics.median(r["proxy"])
        out[name] = {"direct_us": round(dm), "proxy_us": round(pm), "ratio": round(pm / dm, 2)}
    return out


def burn_down(dsn: str, su_cells: list[str], runs: int, tag: str) -> float:
    """Runs per second of one client draining `runs` no-op runs spread over the cells `su_cells`."""
    per = runs // len(su_cells)
    for i, su in enumerate(su_cells):
        ws = f"bench-{tag}-{i + 1}"
        with psycopg.connect(su, autocommit=True) as c:
            c.execute("select pgflight.create_workspace(%s)", [ws])
            c.execute(
                "select count(*) from pgflight.submit_runs(%s, (select jsonb_agg(jsonb_build_object("
                "'recipe', %s::text, 'input', '{}'::jsonb)) from generate_series(1, %s)))",
                [ws, f"noop-{tag}", per],
            )
    with psycopg.connect(dsn, autocommit=True) as c:
        wid = c.execute("select pgflight.register_worker(%s)", [tag]).fetchone()[0]  # type: ignore[index]
        done = 0
        t0 = time.perf_counter()
        idle = 0
        while done < per * len(su_cells) and idle < 50:
            rows = c.execute(
                "select attempt_id, fencing_token from pgflight.claim_batch(%s, 50, 60, %s)",
                [wid, [f"noop-{tag}"]],
            ).fetchall()
            if not rows:
                idle += 1
                time.sleep(0.01)
                continue
            c.execute(
                "select count(*) from pgflight.complete_batch(%s, %s, %s::jsonb[])",
                [[r[0] for r in rows], [r[1] for r in rows], ["{}"] * len(rows)],
            )
            done += len(rows)
        elapsed = time.perf_counter() - t0
        c.execute("select pgflight.deregister_worker(%s)", [wid])
    return round(done / elapsed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3000)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with cells.local_cells(3, logins=LOGINS, password=PASSWORD, settings=SETTINGS) as lc:
        login = next(iter(LOGINS))
        proxies = {}
        for k in (1, 2):
            lc.clusters[0].create_database(f"pgflight_proxy{k}")
            dsn = lc.clusters[0].dsn(f"pgflight_proxy{k}")
            cells.deploy_proxy(dsn, lc.cell_dsns[:k])
            cells.map_login(dsn, login, PASSWORD)
            proxies[k] = dsn
        proxies[3] = lc.proxy_dsn
        direct = lc.as_login(login, PASSWORD, lc.cell_dsns[0])
        report: dict[str, Any] = {
            "note": "one machine: the cells share its cores, so more cells measure the proxy's overhead,"
            " not speed-up",
            "per_call": per_call(
                direct, lc.as_login(login, PASSWORD), lc.cell_dsns[0], args.calls, args.rounds
            ),
            "burn_down_runs_per_s": {},
        }
        bd = report["burn_down_runs_per_s"]
        for r in range(args.rounds):
            bd.setdefault("direct_cell1", []).append(burn_down(direct, lc.cell_dsns[:1], args.runs, f"d{r}"))
            for k in (1, 2, 3):
                bd.setdefault(f"proxy_{k}_cells", []).append(
                    burn_down(
                        lc.as_login(login, PASSWORD, proxies[k]), lc.cell_dsns[:k], args.runs, f"p{k}{r}"
                    )
                )
        report["burn_down_median"] = {k: statistics.median(v) for k, v in bd.items()}
        base = report["burn_down_median"]["direct_cell1"]
        report["burn_down_ratio_to_direct"] = {
            k: round(v / base, 2) for k, v in report["burn_down_median"].items()
        }
        print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
