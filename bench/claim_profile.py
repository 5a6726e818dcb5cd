"""
Claim profile (flow control): where a claim_batch(10)'s server time goes with caps
and keys on versus off. Not a test; prints the figures.

One claimer drains N no-op steps over four workspaces (as bench/claim_cpu_bench.py: `off`
nothing set, `on_local` every workspace capped at 1,000 with 500 keys of limit 5, `on` the same
plus a global cap of 100,000), in a throwaway cluster loading
pg_stat_statements (track = all) and track_functions = all. Per configuration: backend CPU per
claim, every nested statement's time per claim (pg_stat_statements) and the functions' self time
per claim. The caps and keys never bind at these sizes, so by default the claims run without
completions (the statements are then the claim's alone); --complete completes each batch on a
second connection (as in the CPU bench: slots come back and are folded by the next claim), and
the statements and functions of complete_batch are then listed too. With --explain,
auto_explain (nested statements, analyze, buffers) logs the plans of one claim per configuration
to the cluster's log, which is printed. --to @v0.4.0 profiles a tag instead of HEAD.

Usage: python bench/claim_profile.py [N] [--complete] [--explain] [--only off,on] [--to TAG]
(N default 2,000: about a minute per configuration on two loaded cores; N is the quick size, a
full run is N = 20,000, about ten minutes a configuration)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import register, throwaway_cluster
from claim_cpu_bench import CONFIGS, cpu_s, setup

from pgflight import migrate

PROFILED = {
    "shared_preload_libraries": "pg_stat_statements,auto_explain",
    "pg_stat_statements.track": "all",
    "pg_stat_statements.max": "10000",
    "track_functions": "all",
}
THIS_DB = "(select oid from pg_database where datname = current_database())"


def drain(db: str, explain: bool, complete: bool) -> dict[str, Any]:
    """Claim(10) until empty, completing on a second connection; the claimer's profile per claim."""
    with psycopg.connect(db, autocommit=True) as a, psycopg.connect(db, autocommit=True) as b:
        w = register(a, "prof")
        a.execute("select pgflight.claim_batch(%s, 1, 60)", [w]).fetchall()  # warm the caches
        a.execute("select pg_stat_statements_reset(0::oid, " + THIS_DB + ")")
        a.execute("select pg_stat_reset()")
        a0, k, first = cpu_s(a.info.backend_pid), 0, True
        while True:
            if explain and first:
                for s in (
                    "auto_explain.log_min_duration = 0",
                    "auto_explain.log_analyze = on",
                    "auto_explain.log_nested_statements = on",
                    "auto_explain.log_buffers = on",
                ):
                    a.execute("set " + s)
            got = a.execute(
                "select attempt_id, fencing_token from pgflight.claim_batch(%s, 10, 60)", [w]
            ).fetchall()
            if explain and first:
                a.execute("set auto_explain.log_min_duration = -1")
                first = False
            if not got:
                break
            k += 1
            if not complete:
                continue
            b.execute(
                "select count(*) from pgflight.complete_batch(%s, %s, array_fill(null::jsonb, array[%s]))",
                [[x for x, _ in got], [t for _, t in got], len(got)],
            )
        cpu = 1000 * (cpu_s(a.info.backend_pid) - a0) / k
        a.execute("select pg_stat_clear_snapshot()")
        top = a.execute(
            "select total_exec_time from pg_stat_statements where toplevel and dbid = "
            + THIS_DB
            + " and query like '%claim_batch(%'"
        ).fetchone()
        stmts = a.execute(
            "select left(regexp_replace(query, '\\s+', ' ', 'g'), 110), calls, total_exec_time"
            " from pg_stat_statements where dbid = " + THIS_DB + " and not toplevel"
            " order by total_exec_time desc limit 25"
        ).fetchall()
        funcs = a.execute(
            "select funcname, calls, self_time, total_time from pg_stat_user_functions"
            " where schemaname = 'pgflight' order by self_time desc limit 14"
        ).fetchall()
    return {
        "claims": k,
        "claim_cpu_ms": round(cpu, 3),
        "claim_exec_ms": round(float(top[0]) / k, 3) if top else None,
        "statements_ms_per_claim": [(round(float(t) / k, 4), round(n / k, 2), q) for q, n, t in stmts],
        "functions_self_ms_per_claim": [
            (f, round(n / k, 2), round(float(s) / k, 4), round(float(t) / k, 4)) for f, n, s, t in funcs
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", nargs="?", type=int, default=2000)
    parser.add_argument("--explain", action="store_true")
    parser.add_argument("--complete", action="store_true", help="complete each batch (statements then mixed)")
    parser.add_argument("--only", default="off,on_local,on")
    parser.add_argument("--to", default=None, help="deploy this tag instead of HEAD (e.g. @v0.4.0)")
    args = parser.parse_args()
    only = args.only.split(",")
    with throwaway_cluster(settings=PROFILED) as (cluster, dsn):
        for name, caps, keys, glob in CONFIGS:
            if name not in only:
                continue
            db_name = f"prof_{name}"
            with psycopg.connect(dsn, autocommit=True) as c:
                c.execute(f"create database {db_name}")
            db = cluster.dsn(db_name)
            migrate.deploy(db, verify=False, to=args.to)
            with psycopg.connect(db, autocommit=True) as c:
                c.execute("create extension if not exists pg_stat_statements")
            setup(db, caps, keys, glob, args.n)
            r = drain(db, args.explain, args.complete)
            print(
                f"== {name}: {r['claims']} claims, backend CPU {r['claim_cpu_ms']} ms/claim,"
                f" claim_batch exec {r['claim_exec_ms']} ms/claim"
            )
            print("  statements (ms per claim, calls per claim):")
            for t, n, q in r["statements_ms_per_claim"]:
                print(f"    {t:8.4f} {n:6.2f}  {q}")
            print("  functions (calls, self ms, total ms per claim):")
            for f, n, s, t in r["functions_self_ms_per_claim"]:
                print(f"    {f:28s} {n:6.2f} {s:8.4f} {t:8.4f}")
        if args.explain:
            print(cluster.logfile.read_text()[-200_000:])


if __name__ == "__main__":
    main()
