#!/usr/bin/env python3
"""
Engine overhead per agent iteration, as the agent loop writes it: two transactions.

1. ``record_model_call`` with ``mark_tools``: two response blocks (text + tool_use), usage, cost,
   budget settlement, totals, the tool call marked in flight and, on a database after @v0.4.0,
   the admission of the next model call (``next_est_usd``: iteration cap, wall-time caps, atomic
   USD reservation on the run, agent and workspace-day budgets, C24) in the same budget move;
2. ``complete_tool_calls``: the tool's result, and the next call's admission (kept when
   record_model_call made it; made here on @v0.4.0).

Once per attempt (not timed): ``begin_agent_run`` and the first call's ``reserve_budget``. Model
and tool time are excluded. Each configuration is timed on a warm connection:

- ``fsync``: the server's settings (synchronous_commit on): what the loop pays;
- ``sync_commit_off``: the same with ``synchronous_commit = off`` in the session, for comparison
  only (the loop does not use it: a lost commit could lose an admission or a tool's in-flight mark).

Also the median wall time of a one-row INSERT commit on the same server: two of them are the
floor of an iteration with fsync on.

Server time: with ``track_functions`` (set in the session; needs a superuser, else skipped), the
execution time of the two functions per iteration from ``pg_stat_user_functions`` (total_time:
the functions' own work, without parse, network or commit). HOT: the share of agent_runs updates
that were HOT (``pg_stat_user_tables``) over the timed iterations. Prints one JSON object; ms
throughout.

    PGFLIGHT_DSN=postgresql://... python bench/agent_bench.py [--iterations 3000]

The DSN must name a database where pgflight is deployed (sqitch deploy); the bench writes a
workspace `agent-bench-<pid>` and its runs there.

Side by side (the machine is shared, so only ratios taken in the same run count):
``--baseline-dsn`` names a second database (e.g. one deployed ``--to @v0.3.0`` on the same
server); each configuration is then measured on both in alternating rounds (``--rounds``) and the
report holds ``baseline``, ``current`` and their ratios. ``--quick`` is 300 iterations and 2 rounds
(about a minute); the default 3,000 iterations take 3-6 minutes per database on 2 loaded cores.

``--before REF`` (a tag, or a git commit or branch such as ``main``) makes its own throwaway
cluster instead: HEAD as ``--dsn`` and REF beside it as ``--baseline-dsn``, same server, same
moment.

``--profile`` lists where one iteration's server time goes instead: pg_stat_statements
(preloaded; track = all and track_planning set in the session) over 300 iterations of --dsn.

``--tail`` tells where the slowest iterations' time comes from instead, with
synchronous_commit on and off: each call timed apart, a ``select 1`` probe before each iteration
(the machine's own delay), the iterations in which a statement inside the functions was planned
again (pg_stat_statements, as for --profile), the Python garbage collections, autovacuum and
autoanalyze runs and checkpoints meanwhile (--iterations of --dsn).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import psycopg
from benchlib import deploy_ref, process_cpu_s, throwaway_cluster

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


def _early_admission(conn: psycopg.Connection[Any]) -> bool:
    """Whether record_model_call takes p_next_est_usd (the next call's admission; after @v0.4.0)."""
    return bool(
        conn.execute(
            "select to_regprocedure('pgflight.record_model_call(bigint, bigint, bigint, integer, jsonb,"
            " jsonb, text, jsonb, numeric)') is not null"
        ).fetchone()[0]  # type: ignore[index]
    )


def _iterations(
    conn: psycopg.Connection[Any],
    ws: str,
    wid: int,
    n: int,
    detail: Callable[[float, float, float], None] | None = None,
    before: Callable[[], None] | None = None,
) -> list[float]:
    """
    Run `n` agent iterations (agents of PER_AGENT iterations) as the agent loop of this checkout
    writes them (the next call admitted by record_model_call where the database has it); return
    each one's wall time in ms.

    :param detail: (``--tail``) called after each iteration with the ms of a ``select 1`` round
        trip made just before it (a probe of the machine's scheduling and network delay, outside
        the iteration's time), of record_model_call and of complete_tool_calls.
    :param before: (``--tail``) called just before each iteration's probe (not before the
        attempt's submit, claim and begin, which come between every PER_AGENT iterations).
    :return: each iteration's wall time (both calls) in ms.
    """
    early = _early_admission(conn)
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
            probe_ms = 0.0
            if before is not None:
                before()
            if detail is not None:
                p0 = time.perf_counter()
                conn.execute("select 1")
                probe_ms = (time.perf_counter() - p0) * 1000
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
                next_est_usd=EST_USD if early else None,
            )
            assert rec.marked == [tid], rec
            t1 = time.perf_counter()
            adb.complete_tool_calls(
                conn,
                att,
                tok,
                run.agent_run_id,
                [{"type": "tool_result", "tool_use_id": tid, "content": "line\n" * 40}],
                next_iteration=it + 1,
                est_usd=EST_USD,
            )
            t2 = time.perf_counter()
            samples.append((t2 - t0) * 1000)
            if detail is not None:
                detail(probe_ms, (t1 - t0) * 1000, (t2 - t1) * 1000)
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


def _agent_runs_updates(conn: psycopg.Connection[Any]) -> tuple[int, int]:
    """(updates, HOT updates) of pgflight.agent_runs, from the shared statistics."""
    conn.execute("select pg_stat_clear_snapshot()")
    row = conn.execute(
        "select n_tup_upd, n_tup_hot_upd from pg_stat_user_tables"
        " where schemaname = 'pgflight' and relname = 'agent_runs'"
    ).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


class _Target:
    """One database under test: its workspace, worker, samples and statistics over the timed rounds."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        with psycopg.connect(dsn, autocommit=True, prepare_threshold=None) as conn:
            self.ws = f"agent-bench-{os.getpid()}"
            if not conn.execute("select 1 from pgflight.workspaces where name = %s", [self.ws]).fetchone():
                db.create_workspace(conn, self.ws, daily_usd_cap=1_000_000)
            self.wid = db.register_worker(conn, "agent-bench")


def _backend_cpu_s(conn: psycopg.Connection[Any]) -> float | None:
    """
    User + system CPU seconds of the connection's backend so far, from /proc (None when the server
    is not on this machine or not readable). Unlike the functions' time in pg_stat_user_functions,
    which is wall time and grows with every runnable process on a loaded machine, this counts only
    the backend's own work (parse, plan, execute and commit of every call).
    """
    pid = conn.info.backend_pid
    try:
        return process_cpu_s(pid)
    except OSError:
        return None


def _session(dsn: str, sync_commit: str) -> tuple[psycopg.Connection[Any], bool]:
    conn = psycopg.connect(dsn, autocommit=True, prepare_threshold=None)
    conn.execute("select set_config('synchronous_commit', %s, false)", [sync_commit])
    try:
        conn.execute("set track_functions = 'pl'")
        return conn, True
    except psycopg.errors.InsufficientPrivilege:
        return conn, False


def _flushed(dsn: str) -> tuple[dict[str, tuple[int, float]], tuple[int, int]]:
    """Function and agent_runs statistics once idle sessions have flushed theirs (at most 1 s late)."""
    time.sleep(1.2)
    with psycopg.connect(dsn, autocommit=True) as reader:
        return _function_ms(reader), _agent_runs_updates(reader)


def _measure_side_by_side(
    targets: list[_Target], iterations: int, warmup: int, sync_commit: str, rounds: int
) -> list[dict[str, Any]]:
    """
    Each target: a warm-up, then `rounds` rounds of iterations / rounds each, the targets taking
    turns within each round (so both see the same load); per target the wall-time percentiles,
    server time per iteration and the agent_runs HOT share over its timed iterations.
    """
    sessions = [_session(t.dsn, sync_commit) for t in targets]
    try:
        for t, (conn, _) in zip(targets, sessions, strict=True):
            _iterations(conn, t.ws, t.wid, warmup)
        before = [_flushed(t.dsn) for t in targets]
        samples: list[list[float]] = [[] for _ in targets]
        cpu: list[list[float]] = [[] for _ in targets]  # backend CPU ms per iteration, per round
        per_round = max(1, iterations // rounds)
        for _ in range(rounds):
            for i, t in enumerate(targets):
                c0 = _backend_cpu_s(sessions[i][0])
                samples[i] += _iterations(sessions[i][0], t.ws, t.wid, per_round)
                c1 = _backend_cpu_s(sessions[i][0])
                if c0 is not None and c1 is not None:
                    cpu[i].append((c1 - c0) * 1000 / per_round)
    finally:
        for conn, _ in sessions:
            conn.close()
    out = []
    for i, t in enumerate(targets):
        fn_after, upd_after = _flushed(t.dsn)
        fn_before, upd_before = before[i]
        n = len(samples[i])
        res: dict[str, Any] = {"synchronous_commit": sync_commit, **_wall(samples[i])}
        if sessions[i][1]:
            per_call = {}
            for f in ITERATION_FUNCTIONS:
                calls = fn_after.get(f, (0, 0.0))[0] - fn_before.get(f, (0, 0.0))[0]
                total = fn_after.get(f, (0, 0.0))[1] - fn_before.get(f, (0, 0.0))[1]
                per_call[f] = round(total / calls, 4) if calls else None
            res["server_ms_per_call"] = per_call
            res["server_ms_per_iteration"] = round(sum(v for v in per_call.values() if v is not None), 4)
        if cpu[i]:
            # the whole loop's backend CPU (both calls, their parse, plan and commit, and the attempt's
            # submit, claim, begin and end spread over its iterations); median of the rounds
            res["backend_cpu_ms_per_iteration"] = round(statistics.median(cpu[i]), 4)
        updates, hot = upd_after[0] - upd_before[0], upd_after[1] - upd_before[1]
        res["agent_runs_updates_per_iteration"] = round(updates / n, 2)
        res["agent_runs_hot_ratio"] = round(hot / updates, 3) if updates else None
        out.append(res)
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


def _profile(dsn: str, iterations: int) -> dict[str, Any]:
    """
    Where one iteration's server time goes: pg_stat_statements (track = all, so the statements run
    inside the functions are listed too) reset after a warm-up, then `iterations` iterations on one
    connection. Each statement's execution time per iteration and its share of the top-level
    calls' time (the statements nest, so the shares of nested ones overlap their callers').
    Needs pg_stat_statements in shared_preload_libraries and a superuser.
    """
    with psycopg.connect(dsn, autocommit=True, prepare_threshold=None) as conn:
        conn.execute("create extension if not exists pg_stat_statements")
        conn.execute("set pg_stat_statements.track = 'all'")
        conn.execute("set pg_stat_statements.track_planning = on")
        t = _Target(dsn)
        _iterations(conn, t.ws, t.wid, 60)
        conn.execute("select pg_stat_statements_reset()")
        _iterations(conn, t.ws, t.wid, iterations)
        rows = conn.execute(
            "select s.toplevel, s.calls, s.total_exec_time, s.total_plan_time, s.plans,"
            "       regexp_replace(s.query, '\\s+', ' ', 'g')"
            "  from pg_stat_statements s join pg_database d on d.oid = s.dbid"
            " where d.datname = current_database() and s.query !~* 'pg_stat_statements'"
            " order by s.total_exec_time desc limit 40"
        ).fetchall()
    top = sum(r[2] for r in rows if r[0])
    return {
        "iterations": iterations,
        "server_ms_per_iteration_toplevel": round(top / iterations, 4),
        "statements": [
            {
                "toplevel": r[0],
                "calls_per_iteration": round(r[1] / iterations, 2),
                "ms_per_iteration": round(r[2] / iterations, 4),
                "share_of_toplevel": round(r[2] / top, 3) if top else None,
                "plan_ms_per_iteration": round(r[3] / iterations, 4),
                "plans_per_call": round(r[4] / r[1], 2) if r[1] else None,
                "query": r[5][:160],
            }
            for r in rows
            if r[2] / iterations >= 0.002
        ],
    }


def _tail(dsn: str, iterations: int, sync_commit: str) -> dict[str, Any]:
    """
    Where the slowest iterations' time comes from (find the p99's cause before changing
    anything for it). One connection runs `iterations` iterations; for each, a ``select 1`` probe
    just before it, each call's wall time and, from pg_stat_statements (track = all, planning
    tracked, read by a second connection after each iteration), whether a statement inside the
    functions was planned again (a cached plan invalidated, e.g. by an autovacuum or autoanalyze of
    a table it reads, which updates pg_class) and how long that took. Also the Python garbage
    collections, autovacuum and autoanalyze runs on schema pgflight and checkpoints meanwhile.
    Needs pg_stat_statements in shared_preload_libraries and a superuser.

    :param dsn: a database where pgflight is deployed.
    :param iterations: how many iterations to time (after a warm-up of 60).
    :param sync_commit: the session's synchronous_commit (on: what the loop pays; off: no commit wait).
    :return: percentiles of each part, and what the slowest 1 % of iterations had in common.
    """
    t = _Target(dsn)
    rows: list[tuple[float, float, float, int, float]] = []
    collections = [0]

    def count_gc(phase: str, _info: dict[str, int]) -> None:
        collections[0] += phase == "start"

    with (
        psycopg.connect(dsn, autocommit=True, prepare_threshold=None) as conn,
        psycopg.connect(dsn, autocommit=True) as mon,
    ):
        conn.execute("create extension if not exists pg_stat_statements")
        conn.execute("select set_config('synchronous_commit', %s, false)", [sync_commit])
        conn.execute("set pg_stat_statements.track = 'all'")
        conn.execute("set pg_stat_statements.track_planning = on")
        _iterations(conn, t.ws, t.wid, 60)

        def nested_plans() -> tuple[int, float]:
            row = mon.execute(
                "select coalesce(sum(s.plans), 0)::bigint, coalesce(sum(s.total_plan_time), 0)::float8"
                "  from pg_stat_statements(false) s join pg_database d on d.oid = s.dbid"
                " where d.datname = current_database() and not s.toplevel"
            ).fetchone()
            assert row is not None
            return int(row[0]), float(row[1])

        def background() -> tuple[int, int]:
            row = mon.execute(
                "select (select coalesce(sum(autovacuum_count + autoanalyze_count), 0)::bigint"
                "          from pg_stat_user_tables where schemaname = 'pgflight'),"
                "       (select checkpoints_timed + checkpoints_req from pg_stat_bgwriter)"
            ).fetchone()
            assert row is not None
            return int(row[0]), int(row[1])

        last = [nested_plans()]

        def mark() -> None:
            last[0] = nested_plans()

        def record(probe: float, rec: float, comp: float) -> None:
            now = nested_plans()
            rows.append((probe, rec, comp, now[0] - last[0][0], now[1] - last[0][1]))

        bg0 = background()
        gc.callbacks.append(count_gc)
        try:
            _iterations(conn, t.ws, t.wid, iterations, detail=record, before=mark)
        finally:
            gc.callbacks.remove(count_gc)
        bg1 = background()

    def pct(values: list[float], p: float) -> float | None:
        return round(sorted(values)[min(len(values) - 1, int(p * len(values)))], 3) if values else None

    whole = [r[1] + r[2] for r in rows]
    cut = pct(whole, 0.99) or 0.0
    slow = [r for r in rows if r[1] + r[2] >= cut]
    probe_p90 = pct([r[0] for r in rows], 0.9) or 0.0
    replanned = [r for r in rows if r[3] > 0]
    return {
        "synchronous_commit": sync_commit,
        "iterations": len(rows),
        "p50_p99_ms": {
            "iteration": [pct(whole, 0.5), cut],
            "record_model_call": [pct([r[1] for r in rows], 0.5), pct([r[1] for r in rows], 0.99)],
            "complete_tool_calls": [pct([r[2] for r in rows], 0.5), pct([r[2] for r in rows], 0.99)],
            "select_1_probe": [pct([r[0] for r in rows], 0.5), pct([r[0] for r in rows], 0.99)],
        },
        "iterations_with_a_replan": len(replanned),
        "replanned_iteration_median_ms": pct([r[1] + r[2] for r in replanned], 0.5),
        "replan_ms_median": pct([r[4] for r in replanned], 0.5),
        "slowest_1pct": {
            "n": len(slow),
            "share_with_a_replan": round(sum(1 for r in slow if r[3] > 0) / len(slow), 2) if slow else None,
            "share_with_a_probe_over_its_p90": round(sum(1 for r in slow if r[0] >= probe_p90) / len(slow), 2)
            if slow
            else None,
            "mean_record_model_call_ms": round(statistics.fmean(r[1] for r in slow), 3) if slow else None,
            "mean_complete_tool_calls_ms": round(statistics.fmean(r[2] for r in slow), 3) if slow else None,
        },
        "python_gc_collections": collections[0],
        "autovacuum_and_autoanalyze_runs": bg1[0] - bg0[0],
        "checkpoints": bg1[1] - bg0[1],
    }


def _ratios(base: dict[str, Any], cur: dict[str, Any]) -> dict[str, Any]:
    keys = ("p50_ms", "p99_ms", "mean_ms", "server_ms_per_iteration", "backend_cpu_ms_per_iteration")
    return {k: round(cur[k] / base[k], 3) for k in keys if base.get(k) and cur.get(k) is not None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dsn", default=os.environ.get("PGFLIGHT_DSN"))
    ap.add_argument("--baseline-dsn", help="a second database (e.g. @v0.3.0) measured in the same rounds")
    ap.add_argument(
        "--before",
        help="a tag or git commit: a throwaway cluster (pg_stat_statements, track_functions) with HEAD as "
        "--dsn and this as --baseline-dsn",
    )
    ap.add_argument("--iterations", type=int, default=3000)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="300 iterations, 2 rounds, warm-up 60")
    ap.add_argument(
        "--profile", action="store_true", help="only the statement profile (pg_stat_statements) of --dsn"
    )
    ap.add_argument(
        "--tail",
        action="store_true",
        help="only where the slowest iterations' time goes (replans, probe, GC, autovacuum) on --dsn",
    )
    a = ap.parse_args()
    if a.before:
        settings = {"shared_preload_libraries": "pg_stat_statements", "track_functions": "pl"}
        with throwaway_cluster("head", settings) as (cluster, head):
            a.dsn, a.baseline_dsn = head, deploy_ref(cluster, a.before)
            _run(a)
        return
    if not a.dsn:
        raise SystemExit("set PGFLIGHT_DSN or pass --dsn")
    _run(a)


def _run(a: argparse.Namespace) -> None:
    """The report the arguments ask for, on a.dsn (and a.baseline_dsn beside it)."""
    if a.profile:
        print(json.dumps({"load_avg": round(os.getloadavg()[0], 1), **_profile(a.dsn, 300)}, indent=2))
        return
    if a.tail:
        load = round(os.getloadavg()[0], 1)
        res = [_tail(a.dsn, a.iterations, sync) for sync in ("on", "off")]
        report = {"load_avg_start": load, "load_avg_end": round(os.getloadavg()[0], 1), "runs": res}
        print(json.dumps(report, indent=2))
        return
    if a.quick:
        a.iterations, a.rounds, a.warmup = 300, 2, 60
    targets = [_Target(a.dsn)] + ([_Target(a.baseline_dsn)] if a.baseline_dsn else [])
    commit_ms = _commit_ms(a.dsn)
    report: dict[str, Any] = {
        "bench": "agent_iteration_overhead",
        "load_avg_start": round(os.getloadavg()[0], 1),
        "transactions_per_iteration": 2,
        "single_row_commit_p50_ms": commit_ms,
        "calls_per_iteration": list(ITERATION_FUNCTIONS),
    }
    for name, sync in (("fsync", "on"), ("sync_commit_off", "off")):
        res = _measure_side_by_side(targets, a.iterations, a.warmup, sync, a.rounds)
        report[name] = res[0]
        if a.baseline_dsn:
            report[f"baseline_{name}"] = res[1]
            report[f"ratio_{name}"] = _ratios(res[1], res[0])
    report["load_avg_end"] = round(os.getloadavg()[0], 1)
    report["targets"] = {"server_ms_per_iteration": 1.0, "fsync_p99_ms": 8.0, "agent_runs_hot_ratio": 0.9}
    report["meets_targets"] = {
        "server_ms_per_iteration": (report["fsync"].get("server_ms_per_iteration") or 99) <= 1.0,
        "fsync_p99_ms": report["fsync"]["p99_ms"] <= 8.0,
        "agent_runs_hot_ratio": (report["fsync"]["agent_runs_hot_ratio"] or 0) >= 0.9,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
