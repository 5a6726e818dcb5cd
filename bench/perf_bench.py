"""
Where the server's time and writes go. Prints one JSON document; not a test.

On a throwaway cluster (fsync and synchronous_commit on) that loads pg_stat_statements
(track = all) and tracks functions:

1. steps: no-op steps submit -> claim_batch (start) -> complete_batch, batched by ten, on one
   connection for --seconds. Per step: the backend's own CPU (utime + stime from /proc, the
   whole server side of the loop but the WAL writer), the top-level statements' execution time
   (pg_stat_statements), WAL bytes (and by relation, and by relation and record type:
   pg_walinspect); the functions by self time and the statements by total time (the profile);
   HOT ratio (n_tup_hot_upd / n_tup_upd) of every pgflight table updated.
1b. steps_bulk: the same loop with the batch submitted by one submit_runs call (core_bench's
   batched pipeline), so the submit's share is that of the bulk API.
2. agent: --agent-iterations agent iterations (bench/agent_bench.py's loop): HOT ratio of
   agent_runs and step_attempts, server time per iteration.
3. empty claims: two, then four worker processes (pgflight_demo, LISTEN) idle, one job submitted
   every 1 / --low-rate seconds: claim_batch calls per job, empty claims per job (calls less
   rows) and the wake latency p50/p99; with PGFLIGHT_BENCH_BEFORE=<older checkout> the same
   against that version first, side by side (see empty_claims).
4. reclaim: --reclaim running attempts whose lease lapsed an hour ago, bulk-loaded; reclaim_expired()
   as run_sweeps calls it, until nothing is left: reclaims/s and the longest pass.
5. retention: --purge finished runs (one step, attempt, 3 events each; one in five an agent step
   with an agent run, 8 traces and 2 costs rows), finished an hour ago; purge_finished(60, 1000)
   back to back as the sweep loop calls it, then maintain_partitions() (at HEAD it drops the
   traces/costs partitions): runs purged/s, the longest transaction, WAL per run, rows left, live
   and dead tuples of the firehose tables after. With --compare, on the base and on HEAD side by
   side. Quick: --purge 20000 --only retention (about 2 minutes with --compare); full: --purge
   200000 (about 10 minutes at load 10).
6. retention_loop: the same backlog purged by a CALL sweep_loop(120, 5) (pg_cron 1.4's job) with
   settings.purge_after_s = 60: runs/s. With --compare, on the base and on HEAD side by side too.

7. heartbeat: 200 steps claimed at once, heartbeated 20 times each, completed: the HOT ratio of
   step_attempts when most of its updates are heartbeats.

--compare @v0.4.0 deploys that tag into a second database of the same cluster and runs the steps,
steps_bulk, heartbeat, retention and retention_loop phases on it and on HEAD one after the other
(base first): before/after from one run, with head_over_base ratios. Quick: --seconds 5 --only
steps,steps_bulk,heartbeat (about a minute and a half).

Every figure carries the load average read when it was taken (the machine is shared).

Usage: python bench/perf_bench.py [--seconds 10] [--reclaim 1000000] [--purge 100000] [--compare @v0.4.0]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
from benchlib import (
    Conn,
    deploy_ref,
    load_expired_leases,
    process_cpu_s,
    register,
    side_by_side,
    stats_settled,
    throwaway_cluster,
)
from psycopg.conninfo import make_conninfo
from psycopg.types.json import Jsonb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agent_bench import _iterations
from core_bench import bulk_load_finished
from worker_bench import start_workers, stop_workers

from pgflight import db, migrate

PROFILED = {
    "shared_preload_libraries": "pg_cron,pg_stat_statements",
    "pg_stat_statements.track": "all",
    "track_functions": "all",
}
START = Jsonb({"start": True})
THIS_DB = "(select oid from pg_database where datname = current_database())"
TABLES = ("runs", "steps", "step_attempts", "events", "agent_runs", "workers")


def load() -> float:
    return round(os.getloadavg()[0], 1)


def reset(c: Conn) -> None:
    c.execute("select pg_stat_statements_reset(0::oid, " + THIS_DB + ")")
    c.execute("select pg_stat_reset()")


def hot(c: Conn) -> dict[str, Any]:
    c.execute("select pg_stat_clear_snapshot()")
    rows = c.execute(
        "select relname, n_tup_upd, n_tup_hot_upd from pg_stat_user_tables"
        " where schemaname = 'pgflight' and relname = any(%s) and n_tup_upd > 0",
        [list(TABLES)],
    ).fetchall()
    return {r[0]: {"updates": r[1], "hot_ratio": round(r[2] / r[1], 3)} for r in rows}


def wal_by_relation(c: Conn, lsn0: int, lsn1: int, per: int) -> dict[str, float]:
    """WAL bytes per unit by the relation of each record's first block (pg_walinspect), top 12."""
    c.execute("create extension if not exists pg_walinspect")
    rows = c.execute(
        """
        select coalesce(pg_filenode_relation(0, (regexp_match(w.block_ref, 'rel \\d+/\\d+/(\\d+)'))[1]::oid)
                          ::text, w.resource_manager) as rel,
               sum(w.record_length)
          from pg_get_wal_records_info(%s::text::pg_lsn, %s::text::pg_lsn) w
         group by 1 order by 2 desc limit 12
        """,
        [f"{lsn0 >> 32:X}/{lsn0 & 0xFFFFFFFF:X}", f"{lsn1 >> 32:X}/{lsn1 & 0xFFFFFFFF:X}"],
    ).fetchall()
    return {str(r): round(float(b) / max(per, 1)) for r, b in rows}


def wal_by_record(c: Conn, lsn0: int, lsn1: int, per: int) -> dict[str, list[float]]:
    """
    WAL per unit by relation (table or index) and record type, top 24: "rel record" ->
    [records, bytes] per unit. Shows which index and which kind of write (insert, non-HOT or HOT
    update, row lock, speculative-insert confirm) the bytes go to.
    """
    rows = c.execute(
        """
        select coalesce(pg_filenode_relation(0, (regexp_match(w.block_ref, 'rel \\d+/\\d+/(\\d+)'))[1]::oid)
                          ::text, '-') || ' ' || w.resource_manager || ':' || w.record_type,
               count(*), sum(w.record_length)
          from pg_get_wal_records_info(%s::text::pg_lsn, %s::text::pg_lsn) w
         group by 1 order by 3 desc limit 24
        """,
        [f"{lsn0 >> 32:X}/{lsn0 & 0xFFFFFFFF:X}", f"{lsn1 >> 32:X}/{lsn1 & 0xFFFFFFFF:X}"],
    ).fetchall()
    return {str(k): [round(n / max(per, 1), 2), round(float(b) / max(per, 1))] for k, n, b in rows}


def profile(c: Conn, per: int) -> dict[str, Any]:
    """Top-level statement time per unit, functions by self time, nested statements by total time."""
    c.execute("select pg_stat_clear_snapshot()")
    top = c.execute(
        "select coalesce(sum(total_exec_time), 0) from pg_stat_statements where toplevel and dbid = "
        + THIS_DB
    ).fetchone()
    funcs = c.execute(
        "select funcname, calls, round(self_time::numeric, 1), round(total_time::numeric, 1)"
        " from pg_stat_user_functions where schemaname = 'pgflight' order by self_time desc limit 10"
    ).fetchall()
    stmts = c.execute(
        "select left(regexp_replace(query, '\\s+', ' ', 'g'), 90), calls,"
        " round(total_exec_time::numeric, 1), toplevel"
        " from pg_stat_statements where dbid = " + THIS_DB + " order by total_exec_time desc limit 12"
    ).fetchall()
    return {
        "toplevel_exec_ms_per_unit": round(float(top[0]) / max(per, 1), 4) if top else None,
        "functions_self_ms": [
            {"function": f, "calls": n, "self_ms": float(s), "total_ms": float(t)} for f, n, s, t in funcs
        ],
        "statements_ms": [
            {"query": q, "calls": n, "total_ms": float(t), "toplevel": lvl} for q, n, t, lvl in stmts
        ],
    }


def steps(dsn: str, seconds: float, batch: int, bulk: bool = False) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as obs:
        reset(obs)
        before = stats_settled(obs)
        events0 = _count(obs, "pgflight.events")
        done = 0
        with psycopg.connect(dsn, autocommit=True) as c:
            w = register(c, "perf")
            pid = c.info.backend_pid
            cpu0, t0 = process_cpu_s(pid), time.perf_counter()
            while time.perf_counter() < t0 + seconds:
                if bulk:  # the batch in one submit_runs call, as core_bench's batched pipeline
                    c.execute(
                        "select count(*) from pgflight.submit_runs('bench', (select"
                        " jsonb_agg(jsonb_build_object('recipe', 'noop')) from generate_series(1, %s)))",
                        [batch],
                    )
                else:
                    c.execute(
                        "select pgflight.submit_run('bench', 'noop', '{}') from generate_series(1, %s)",
                        [batch],
                    )
                got = c.execute(
                    "select attempt_id, fencing_token from pgflight.claim_batch(%s, %s, 60, %s, %s)",
                    [w, batch, ["noop"], START],
                ).fetchall()
                c.execute(
                    "select count(*) from pgflight.complete_batch(%s, %s,"
                    " array_fill(null::jsonb, array[%s]))",
                    [[a for a, _ in got], [t for _, t in got], len(got)],
                )
                done += len(got)
            wall, cpu = time.perf_counter() - t0, process_cpu_s(pid) - cpu0
        after = stats_settled(obs)
        prof = profile(obs, done)  # before the WAL read below, which pg_stat_statements would count
        return {
            "load_avg": load(),
            "batch": batch,
            "submit": "submit_runs per batch" if bulk else "submit_run per step",
            "steps": done,
            "steps_per_s": round(done / wall, 1),
            "backend_cpu_ms_per_step": round(cpu * 1000 / done, 4),
            "wal_bytes_per_step": round((after.wal_lsn - before.wal_lsn) / done),
            "commits_per_step": round((after.commits - before.commits) / done, 3),
            "events_rows_per_step": round((_count(obs, "pgflight.events") - events0) / done, 2),
            "wal_bytes_per_step_by_relation": wal_by_relation(obs, before.wal_lsn, after.wal_lsn, done),
            "wal_per_step_by_record": wal_by_record(obs, before.wal_lsn, after.wal_lsn, done),
            "hot": hot(obs),
            **prof,
        }


def _count(c: Conn, table: str) -> int:
    row = c.execute(f"select count(*) from {table}").fetchone()  # type: ignore[arg-type]
    return int(row[0]) if row else 0


def heartbeats(dsn: str, n: int, beats: int) -> dict[str, Any]:
    """
    Long steps: `n` steps claimed (started) at once, heartbeated `beats` times each (one
    heartbeat call for all), then completed: the HOT ratio of step_attempts when most of its
    updates are heartbeats, and the server time of one heartbeat per attempt.
    """
    with psycopg.connect(dsn, autocommit=True) as c:
        w = register(c, "beats")
        c.execute("select pgflight.submit_run('bench', 'long', '{}') from generate_series(1, %s)", [n])
        reset(c)
        got = c.execute(
            "select attempt_id, fencing_token from pgflight.claim_batch(%s, %s, 60, %s, %s)",
            [w, n, ["long"], START],
        ).fetchall()
        ids, tokens = [a for a, _ in got], [t for _, t in got]
        pid = c.info.backend_pid
        cpu0 = process_cpu_s(pid)
        for _ in range(beats):
            c.execute("select count(*) from pgflight.heartbeat(%s, %s, %s)", [w, ids, tokens])
        cpu = process_cpu_s(pid) - cpu0
        c.execute(
            "select count(*) from pgflight.complete_batch(%s, %s, array_fill(null::jsonb, array[%s]))",
            [ids, tokens, len(ids)],
        )
    with psycopg.connect(dsn, autocommit=True) as obs:
        stats_settled(obs)
        return {
            "load_avg": load(),
            "attempts": len(ids),
            "heartbeats_each": beats,
            "backend_cpu_ms_per_attempt_heartbeat": round(cpu * 1000 / max(len(ids) * beats, 1), 4),
            "hot": hot(obs),
        }


def agent(dsn: str, iterations: int) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True, prepare_threshold=None) as c:
        db.create_workspace(c, "agent-perf", daily_usd_cap=1_000_000)
        wid = db.register_worker(c, "agent-perf")
        reset(c)
        pid = c.info.backend_pid
        cpu0, t0 = process_cpu_s(pid), time.perf_counter()
        samples = _iterations(c, "agent-perf", wid, iterations)
        wall, cpu = time.perf_counter() - t0, process_cpu_s(pid) - cpu0
    with psycopg.connect(dsn, autocommit=True) as obs:
        stats_settled(obs)
        return {
            "load_avg": load(),
            "iterations": len(samples),
            "iterations_per_s": round(len(samples) / wall, 1),
            "backend_cpu_ms_per_iteration": round(cpu * 1000 / len(samples), 3),
            "hot": hot(obs),
            **profile(obs, len(samples)),
        }


def empty_claims(dsn: str, rate: float, jobs: int) -> dict[str, Any]:
    """
    Idle worker processes (pgflight_demo, concurrency 4, LISTEN), 2 and then 4 of them, one job
    submitted every 1 / `rate` seconds: claim_batch executions per job (pg_stat_user_functions),
    empty claims per job (executions less the claims that leased something: distinct (worker,
    claimed_at) of the attempts), and the wake latency (created_at -> claimed_at of each attempt,
    both the server's clock_timestamp) p50 / p99 in ms.

    With PGFLIGHT_BENCH_BEFORE=<a checkout of an earlier version> (e.g. ``git archive <commit of
    @v0.3.0> | tar -x -C /tmp/v030``) that version runs beside this one at the same moment (side by
    side: the machine is shared): a second database of the same cluster deployed from
    its sql/, its own workers with its code on PYTHONPATH, and each job submitted to both, in turn
    first. About jobs / rate + 15 seconds per size.
    """
    before_tree = os.environ.get("PGFLIGHT_BENCH_BEFORE")
    versions: list[tuple[str, str, Path | None]] = [("after", dsn, None)]
    if before_tree:
        root = Path(before_tree).resolve()
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("drop database if exists pgflight_before")
            c.execute("create database pgflight_before")
        before_dsn = make_conninfo(dsn, dbname="pgflight_before")
        migrate.deploy(before_dsn, verify=False, root=root)
        with psycopg.connect(before_dsn, autocommit=True) as c:
            c.execute("create extension if not exists pg_stat_statements")
            c.execute("select pgflight.create_workspace('bench')")
        versions.insert(0, ("before", before_dsn, root))
    out: dict[str, Any] = {"jobs": jobs, "jobs_per_s": rate, "concurrency": 4}
    for processes in (2, 4):
        figures = _empty_claims_side_by_side(versions, rate, jobs, processes)
        for label, fig in figures.items():
            key = f"{label}_{processes}_processes" if before_tree else f"{processes}_processes"
            out[key] = fig
            print(json.dumps({"empty": {key: fig}}), file=sys.stderr, flush=True)
    return out


def _empty_claims_side_by_side(
    versions: list[tuple[str, str, Path | None]], rate: float, jobs: int, processes: int
) -> dict[str, dict[str, Any]]:
    """`processes` workers per version at once; each job goes to every version, in turn first."""
    procs: list[Any] = []
    saved = os.environ.get("PYTHONPATH")
    try:
        for _, target, root in versions:
            if root is not None:  # the workers run that version's code
                os.environ["PYTHONPATH"] = os.pathsep.join(
                    [str(root / "python_worker"), str(root / "examples")]
                )
            elif saved is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = saved
            procs += start_workers(target, processes, 4)
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    conns = [psycopg.connect(target, autocommit=True) for _, target, _ in versions]
    try:
        for c in conns:
            while (
                c.execute("select count(*) from pgflight.workers where stopped_at is null").fetchone()[0]  # type: ignore[index]
                < processes
            ):
                time.sleep(0.2)
        time.sleep(3)  # the workers' first polls are over
        first = [
            c.execute("select coalesce(max(id), 0) from pgflight.step_attempts").fetchone()[0] for c in conns
        ]  # type: ignore[index]
        calls0 = [_claim_batch_calls(c) for c in conns]
        for i in range(jobs):
            for c in conns[i % len(conns) :] + conns[: i % len(conns)]:
                c.execute("select pgflight.submit_run('bench', 'noop', '{}')")
            time.sleep(1 / rate)
        for c in conns:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                left = c.execute(
                    "select count(*) from pgflight.step_attempts"
                    " where recipe = 'noop' and status <> 'succeeded'"
                ).fetchone()
                if left and left[0] == 0:
                    break
                time.sleep(0.2)
        time.sleep(2.5)  # idle backends flush their function counters within about a second
        out: dict[str, dict[str, Any]] = {}
        for (label, _, _), c, f, c0 in zip(versions, conns, first, calls0, strict=True):
            calls = _claim_batch_calls(c) - c0
            row = c.execute(
                "select count(distinct (worker_id, claimed_at)),"
                " percentile_cont(array[0.5, 0.99]) within group"
                " (order by extract(epoch from claimed_at - created_at) * 1000)"
                " from pgflight.step_attempts where recipe = 'noop' and id > %s",
                [f],
            ).fetchone()
            assert row is not None
            full, lat = int(row[0]), row[1]
            out[label] = {
                "load_avg": load(),
                "worker_processes": processes,
                "claim_calls_per_job": round(calls / jobs, 2),
                "empty_claims_per_job": round((calls - full) / jobs, 2),
                "wake_latency_ms_p50": round(lat[0], 1),
                "wake_latency_ms_p99": round(lat[1], 1),
            }
        return out
    finally:
        for c in conns:
            c.close()
        stop_workers(procs)


def _claim_batch_calls(c: Conn) -> int:
    """Executions of claim_batch so far in this database (pg_stat_user_functions, track_functions)."""
    c.execute("set stats_fetch_consistency = none")
    row = c.execute(
        "select coalesce(sum(calls), 0) from pg_stat_user_functions"
        " where schemaname = 'pgflight' and funcname = 'claim_batch'"
    ).fetchone()
    return int(row[0]) if row else 0


def drain(c: Conn, sql: str, args: list[Any]) -> dict[str, Any]:
    """Call `sql` (returning a count) until it returns 0; total, calls, rate, longest call."""
    total, calls, longest = 0, 0, 0.0
    t0 = time.perf_counter()
    while True:
        t = time.perf_counter()
        row = c.execute(sql, args).fetchone()
        longest = max(longest, time.perf_counter() - t)
        calls += 1
        n = int(row[0]) if row else 0
        if n == 0:
            break
        total += n
    wall = time.perf_counter() - t0
    return {
        "load_avg": load(),
        "rows": total,
        "calls": calls,
        "per_call": round(total / max(calls - 1, 1), 1),
        "rows_per_s": round(total / wall, 1),
        "seconds": round(wall, 1),
        "longest_call_s": round(longest, 2),
    }


def reclaim(dsn: str, n: int) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as c:
        t0 = time.perf_counter()
        load_expired_leases(c, n)
        loaded = round(time.perf_counter() - t0, 1)
        out = drain(c, "select pgflight.reclaim_expired()", [])
        out["load_s"] = loaded
        out["minutes_for_1m"] = round(1_000_000 / out["rows_per_s"] / 60, 1)
        return out


AGENT_EVERY = 5  # one finished run in five is an agent step: an agent run, 8 traces rows, 2 costs rows
FIREHOSE = ("runs", "steps", "step_attempts", "agent_runs", "traces", "costs", "events")


def bulk_load_agents(c: Conn) -> None:
    """An agent run with 8 traces and 2 costs rows for every AGENT_EVERY-th finished run loaded."""
    c.execute(
        """
        with a as (
          insert into pgflight.agent_runs (step_id, run_id, workspace_id, model, system_prompt_hash,
                                           iterations, created_at, updated_at)
          select s.id, s.run_id, r.workspace_id, 'claude-haiku-4-5', 'x', 2, r.created_at, r.finished_at
            from pgflight.steps s join pgflight.runs r on r.id = s.run_id
           where s.run_id %% %s = 0
          returning id, step_id, run_id, workspace_id, created_at
        ), t as (
          insert into pgflight.traces (agent_run_id, iteration, seq, role, block_type, content, created_at,
                                       updated_at)
          select a.id, g / 4, g %% 4, case when g %% 4 = 0 then 'user' else 'assistant' end, 'text',
                 jsonb_build_object('type', 'text', 'text', repeat('x', 200)), a.created_at, a.created_at
            from a, generate_series(0, 7) g
        )
        insert into pgflight.costs (agent_run_id, iteration, step_id, run_id, workspace_id, model,
                                    input_tokens, output_tokens, usd, at)
        select a.id, i, a.step_id, a.run_id, a.workspace_id, 'claude-haiku-4-5', 1000, 100, 0.001,
               a.created_at
          from a, generate_series(1, 2) i
        """,
        [AGENT_EVERY],
    )
    c.execute("vacuum analyze pgflight.agent_runs, pgflight.traces, pgflight.costs")


def _table_stats(c: Conn) -> dict[str, dict[str, int]]:
    """Live and dead tuples of the firehose tables (their partitions summed), after a stats flush."""
    time.sleep(1.2)  # the purging backend's counters reach the shared stats within a second
    got = c.execute(
        """
        select coalesce(p.relname, s.relname), sum(s.n_live_tup)::bigint, sum(s.n_dead_tup)::bigint
          from pg_stat_user_tables s
          left join pg_inherits i on i.inhrelid = s.relid
          left join pg_class p on p.oid = i.inhparent
         where s.schemaname = 'pgflight' and coalesce(p.relname, s.relname) = any(%s)
         group by 1 order by 1
        """,
        [list(FIREHOSE)],
    ).fetchall()
    return {str(r[0]): {"live": int(r[1]), "dead": int(r[2])} for r in got}


def retention(dsn: str, n: int) -> dict[str, Any]:
    """
    --purge N finished runs (one in AGENT_EVERY an agent step with traces and costs), purged as the
    sweep loop purges them: purge_finished(60, 1000) back to back, each call its own transaction,
    then maintain_partitions() (at HEAD it drops the traces/costs partitions whose agent runs are
    all purged). Runs purged/s over both, the longest transaction, the rows left, dead tuples after.
    """
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("truncate pgflight.events, pgflight.step_attempts, pgflight.steps, pgflight.runs cascade")
        bulk_load_finished(c, n)
        bulk_load_agents(c)
        counts = c.execute(
            "select (select count(*) from pgflight.agent_runs), (select count(*) from pgflight.traces),"
            " (select count(*) from pgflight.costs)"
        ).fetchone()
        assert counts is not None
        # the agent run ids were all drawn: at HEAD their partition's range ends past them; move
        # the sequence to that end, as the agent runs created since would have
        if c.execute("select to_regprocedure('pgflight._firehose_partitions()') is not null").fetchone() == (
            True,
        ):
            c.execute(
                "select setval('pgflight.agent_runs_id_seq', b.hi, true)"
                " from pgflight._firehose_partitions() b, pgflight.agent_runs_id_seq q"
                " where q.last_value between b.lo and b.hi - 1"
            )
        lsn0 = c.execute("select pg_current_wal_lsn()").fetchone()[0]  # type: ignore[index]
        t0 = time.perf_counter()
        out = drain(c, "select pgflight.purge_finished(60, 1000)", [])
        t = time.perf_counter()
        acts = c.execute("select action, count(*) from pgflight.maintain_partitions() group by 1").fetchall()
        maintain_s = time.perf_counter() - t
        wall = time.perf_counter() - t0
        wal = c.execute("select pg_current_wal_lsn() - %s::pg_lsn", [lsn0]).fetchone()[0]  # type: ignore[index]
        left = c.execute(
            "select (select count(*) from pgflight.runs), (select count(*) from pgflight.traces),"
            " (select count(*) from pgflight.costs)"
        ).fetchone()
        assert left is not None
        out.update(
            {
                "agent_runs": counts[0],
                "traces_rows": counts[1],
                "costs_rows": counts[2],
                "maintain_partitions_s": round(maintain_s, 3),
                "partition_actions": {str(a): int(k) for a, k in acts},
                "runs_purged_per_s": round(out["rows"] / wall, 1),
                "longest_transaction_s": max(out["longest_call_s"], round(maintain_s, 3)),
                "wal_bytes_per_run": round(int(wal) / max(out["rows"], 1)),
                "left": {"runs": left[0], "traces": left[1], "costs": left[2]},
                "tables_after": _table_stats(c),
            }
        )
        return out


def retention_loop(dsn: str, n: int, seconds: float) -> dict[str, Any]:
    """
    Runs purged per second by `CALL sweep_loop(seconds, 5)` (the pg_cron 1.4 job) with retention
    60 s: the time until no run is left, watched from another connection.
    """
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("truncate pgflight.events, pgflight.step_attempts, pgflight.steps, pgflight.runs cascade")
        bulk_load_finished(c, n)
        bulk_load_agents(c)
        c.execute("update pgflight.settings set purge_after_s = 60")
    loop = threading.Thread(target=_call, args=(dsn, f"call pgflight.sweep_loop({seconds}, 5)"))
    t0 = time.perf_counter()
    loop.start()
    with psycopg.connect(dsn, autocommit=True) as c:
        left = n
        while left and loop.is_alive():
            time.sleep(0.5)
            row = c.execute("select count(*) from pgflight.runs").fetchone()
            left = int(row[0]) if row else 0
        wall = time.perf_counter() - t0
    loop.join()
    return {
        "load_avg": load(),
        "runs": n,
        "purged": n - left,
        "seconds": round(wall, 1),
        "runs_per_s": round((n - left) / wall, 1),
    }


def _call(dsn: str, sql: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(sql)  # type: ignore[arg-type]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--agent-iterations", type=int, default=600)
    ap.add_argument("--low-rate", type=float, default=5, help="jobs/s for the empty-claims phase")
    ap.add_argument("--low-jobs", type=int, default=50)
    ap.add_argument("--reclaim", type=int, default=20_000, help="expired leases (the target: 1000000)")
    ap.add_argument("--purge", type=int, default=20_000, help="finished runs to purge")
    ap.add_argument(
        "--hot-experiment",
        action="store_true",
        help="before the agent phase: agent_runs fillfactor 80 and without agent_runs_reserved_idx",
    )
    ap.add_argument(
        "--only", default="steps,steps_bulk,heartbeat,agent,empty,reclaim,retention,retention_loop"
    )
    ap.add_argument(
        "--compare",
        metavar="REF",
        help="also deploy schema REF (a sqitch tag such as @v0.3.0) into a second database of the same"
        " cluster and run the steps, heartbeat and retention phases on both, alternately: base, head and"
        " head/base",
    )
    a = ap.parse_args()
    only = set(a.only.split(","))
    report: dict[str, Any] = {
        "bench": "perf",
        "durability": "fsync=on synchronous_commit=on",
        "cpus": os.cpu_count(),
    }
    started = time.perf_counter()
    with throwaway_cluster(settings=PROFILED) as (_cluster, dsn):
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("create extension if not exists pg_stat_statements")
            report["server"] = c.execute("show server_version").fetchone()[0]  # type: ignore[index]
            if a.hot_experiment:  # what the proposal in docs/benchmarks.md would buy (not a migration)
                c.execute("alter table pgflight.agent_runs set (fillfactor = 80)")
                c.execute("drop index pgflight.agent_runs_reserved_idx")
                report["hot_experiment"] = "agent_runs fillfactor 80, agent_runs_reserved_idx dropped"
        base = deploy_ref(_cluster, a.compare) if a.compare else None
        if base:
            report["compare"] = a.compare
            with psycopg.connect(base, autocommit=True) as c:
                c.execute("create extension if not exists pg_stat_statements")

        def both(phase: Any) -> Any:
            """The phase on HEAD, or with --compare on the base then on HEAD, side by side."""
            return lambda: side_by_side(phase(base), phase(dsn)) if base else phase(dsn)

        parts = {
            "steps": both(lambda d: steps(d, a.seconds, 10)),
            "steps_bulk": both(lambda d: steps(d, a.seconds, 10, bulk=True)),
            "heartbeat": both(lambda d: heartbeats(d, 200, 20)),
            "agent": lambda: agent(dsn, a.agent_iterations),
            "empty": lambda: empty_claims(dsn, a.low_rate, a.low_jobs),
            "reclaim": lambda: reclaim(dsn, a.reclaim),
            "retention": both(lambda d: retention(d, a.purge)),
            "retention_loop": both(lambda d: retention_loop(d, a.purge, 120)),
        }
        for name, part in parts.items():
            if name in only:
                report[name] = part()
                print(json.dumps({name: report[name]}), file=sys.stderr, flush=True)
    report["total_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
