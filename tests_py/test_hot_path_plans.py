"""
The hot path reads the rows of a batch by index, whatever the statistics said when its plans were
made.

A worker's connection lives for hours, and PL/pgSQL keeps each statement's plan for the session.
A plan made while a table was small (a fresh deployment, the first minutes of a burst) stays when
the table grows, until an ANALYZE invalidates it. Before this was fixed, the lease update of
claim_batch and the first read of _steps_finished hash-joined a sequential scan of `steps` made
at that time: every claim and every completion read the whole table (0.9 ms a call at 5,000
steps, growing linearly).

The test makes the plans on small tables (autovacuum off, so no ANALYZE replaces them), grows the
tables, and reads the plans the same session then runs, nested statements included, through
auto_explain sent to the client as notices.
"""

from __future__ import annotations

import re

import psycopg

from core_helpers import (
    WORKSPACE,
    Conn,
    claim,
    complete_batch,
    fail,
    heartbeat,
    register,
    start_step,
    submit_many,
)

HOT_TABLES = ("runs", "steps", "step_attempts")


def _plans(conn: Conn, work: object) -> list[str]:
    """The plans of every statement `work()` runs on `conn`, nested ones included."""
    seen: list[str] = []

    def keep(d: psycopg.errors.Diagnostic) -> None:
        if d.message_primary and "plan:" in d.message_primary:
            seen.append(d.message_primary)

    conn.execute("load 'auto_explain'")
    conn.execute("set auto_explain.log_min_duration = 0")
    conn.execute("set auto_explain.log_nested_statements = on")
    conn.execute("set auto_explain.log_level = notice")
    conn.execute("set client_min_messages = notice")
    conn.add_notice_handler(keep)
    try:
        work()  # type: ignore[operator]
    finally:
        conn.remove_notice_handler(keep)
        conn.execute("set auto_explain.log_min_duration = -1")
    return seen


def _seq_scans(plans: list[str]) -> list[str]:
    """Each plan line that reads a hot table sequentially, with the statement it belongs to."""
    found = []
    for p in plans:
        for table in HOT_TABLES:
            if re.search(rf"Seq Scan on {table}\b", p):
                query = p.split("Query Text:", 1)[-1].strip().splitlines()[0]
                found.append(f"{table}: {query[:120]}")
    return found


def _jit_compiled(plans: list[str]) -> list[str]:
    """
    The statements JIT-compiled: with seq scans off, a table no index serves is costed past
    jit_above_cost and compiled on every call (about 400 ms each, found on the agent path).
    """
    return [
        p.split("Query Text:", 1)[-1].strip().splitlines()[0][:120]
        for p in plans
        if re.search(r"^\s*JIT:", p, re.M)
    ]


def test_submit_claim_heartbeat_complete_and_fail_read_by_index_after_the_tables_grew(
    eng: Conn, dsn: str
) -> None:
    for table in HOT_TABLES:
        eng.execute(f"alter table pgflight.{table} set (autovacuum_enabled = off)")
    w = register(eng)
    submit_many(eng, 30, "hot")
    eng.execute("analyze pgflight.runs, pgflight.steps, pgflight.step_attempts")
    # the session's plans, made on 30 rows: claim, heartbeat, complete, fail
    first = claim(eng, w, 10, 60, ["hot"])
    heartbeat(eng, w, first)
    assert complete_batch(eng, first[:8]) == ["succeeded"] * 8
    for c in first[8:]:
        fail(eng, c, {"message": "boom"})
    # the tables grow to a few thousand rows, as in the first minutes of a burst
    with psycopg.connect(dsn, autocommit=True) as other:
        submit_many(other, 5000, "hot")

    def batch() -> None:
        submit_many(eng, 10, "hot")
        eng.execute(
            "select count(*) from pgflight.submit_runs(%s, (select jsonb_agg(jsonb_build_object("
            "'recipe', 'hot', 'input', jsonb_build_object('i', g))) from generate_series(1, 10) g))",
            [WORKSPACE],
        )
        got = claim(eng, w, 10, 60, ["hot"])
        assert len(got) == 10
        assert set(heartbeat(eng, w, got).values()) == {"held"}
        assert complete_batch(eng, got[:8]) == ["succeeded"] * 8
        for c in got[8:]:
            fail(eng, c, {"message": "boom"})

    plans = _plans(eng, batch)
    assert len(plans) > 10, "auto_explain showed no nested plans"
    assert _seq_scans(plans) == []
    assert _jit_compiled(plans) == []


AGENT_TABLES = r"(budgets|agent_runs|steps|step_attempts|workers|traces\w*|costs\w*)"


def _agent_iterations(conn: Conn, w: int, n: int) -> None:
    """One agent as the loop writes it: begin, the first admission, then `n` iterations of a model
    call that asks for a tool (the next call admitted with it) and the tool's result."""
    from decimal import Decimal

    from pgflight import db
    from pgflight.db import agent as _agent_db  # noqa: F401  (db.agent)

    db.submit_run(conn, "agents", "agent", {"task": "plans"}, max_usd=100)
    (c,) = db.claim_batch(conn, w, batch_size=1, lease_s=300, recipes=["agent"])
    db.start_step(conn, c.attempt_id, c.fencing_token)
    run = db.agent.begin_agent_run(
        conn, c.attempt_id, c.fencing_token, model="claude-sonnet-4-6", task="t", max_usd=50
    )
    db.agent.reserve_budget(conn, c.attempt_id, c.fencing_token, run.agent_run_id, 1, Decimal("0.02"))
    for it in range(1, n + 1):
        tid = f"toolu_{c.attempt_id}_{it}"
        blocks = [{"type": "text", "text": "next"}, {"type": "tool_use", "id": tid, "name": "t", "input": {}}]
        usage = {"input_tokens": 100, "output_tokens": 10}
        rec = db.agent.record_model_call(
            conn,
            c.attempt_id,
            c.fencing_token,
            run.agent_run_id,
            it,
            blocks,
            usage,
            "claude-sonnet-4-6",
            stop_reason="tool_use",
            mark_tools=True,
            next_est_usd=Decimal("0.02"),
        )
        assert rec.marked == [tid]
        db.agent.complete_tool_calls(
            conn,
            c.attempt_id,
            c.fencing_token,
            run.agent_run_id,
            [{"type": "tool_result", "tool_use_id": tid, "content": "ok"}],
            next_iteration=it + 1,
            est_usd=Decimal("0.02"),
        )
    db.complete_step(conn, c.attempt_id, c.fencing_token, {"answer": "done"})


def test_agent_iteration_reads_by_index_after_the_tables_grew(eng: Conn, dsn: str) -> None:
    """
    An agent's begin, admission, model calls and tool results read budgets, agent runs, steps and
    the firehose by index with plans made while those tables were small (a plan made
    that way may read the whole budgets table at every budget move and wall-time check, and
    steps and agent_runs whole at every agent start).
    """
    from pgflight import db

    for table in ("budgets", "agent_runs", "runs", "steps", "step_attempts"):
        eng.execute(f"alter table pgflight.{table} set (autovacuum_enabled = off)")
    db.create_workspace(eng, "agents", daily_usd_cap=1000)
    w = register(eng)
    _agent_iterations(eng, w, 2)  # the session's plans, made on a few rows
    with psycopg.connect(dsn, autocommit=True) as other:
        submit_many(other, 3000, "hot", workspace="agents")
        other.execute(
            "insert into pgflight.agent_runs (step_id, run_id, workspace_id, model, system_prompt_hash)"
            " select s.id, s.run_id, r.workspace_id, 'm', 'h' from pgflight.steps s"
            " join pgflight.runs r on r.id = s.run_id where s.recipe = 'hot'"
        )
        other.execute(
            "insert into pgflight.budgets (scope, workspace_id, day, limit_usd, started_at)"
            " select 'workspace_day', w.id, date '2000-01-01' + g, 10, pgflight._now()"
            " from pgflight.workspaces w, generate_series(1, 5000) g where w.name = 'agents'"
        )
    plans = _plans(eng, lambda: _agent_iterations(eng, w, 2))
    assert len(plans) > 10, "auto_explain showed no nested plans"
    seq = []
    for p in plans:
        for m in re.finditer(rf"Seq Scan on {AGENT_TABLES}\b", p):
            seq.append(f"{m.group(1)}: {p.split('Query Text:', 1)[-1].strip().splitlines()[0][:120]}")
    assert seq == []


def test_start_step_reads_by_index_after_the_tables_grew(eng: Conn, dsn: str) -> None:
    """start_step's plans, made while step_attempts and workers were small, do not read them whole later."""
    for table in (*HOT_TABLES, "workers"):
        eng.execute(f"alter table pgflight.{table} set (autovacuum_enabled = off)")
    w = register(eng)
    submit_many(eng, 30, "hot")
    eng.execute("analyze pgflight.runs, pgflight.steps, pgflight.step_attempts, pgflight.workers")
    # the session's plans, made on 30 rows (six starts: past the plan cache's five custom plans)
    for c in claim(eng, w, 6, 60, ["hot"]):
        start_step(eng, c)
    # then thousands of attempts are leased (another worker's), as in a burst
    with psycopg.connect(dsn, autocommit=True) as other:
        submit_many(other, 5000, "hot")
        other.execute("select pgflight.register_worker(%s, '{}') from generate_series(1, 500) g", ["other"])
        assert len(claim(other, register(other, "other"), 3000, 600, ["hot"])) == 3000
    got = claim(eng, w, 5, 60, ["hot"])
    plans = _plans(eng, lambda: [start_step(eng, c) for c in got])
    mine = [p for p in plans if "set status = 'running'" in p or "'running')" in p]
    assert len(mine) == 5, "auto_explain showed no start_step plan"
    for p in mine:
        # the attempt by its primary key: not a walk of a partial index of every leased attempt
        reads = re.findall(r"Scan(?: Backward)? (?:using (\w+) )?on step_attempts\b", p)
        assert reads == ["step_attempts_pkey"], p
    assert [p for p in plans if re.search(r"Seq Scan on (step_attempts|workers)\b", p)] == []


def test_a_claim_naming_recipes_probes_each_recipe_ready_index(eng: Conn, dsn: str) -> None:
    """
    The lane probe of claim_batch's fast path, for recipes named with nothing queued behind one
    recipe that fills the queue: each is read from the recipe's ready index (one probe), never by
    walking the workspace's ready index past the other recipe's rows, whatever the statistics.
    """
    for table in HOT_TABLES:
        eng.execute(f"alter table pgflight.{table} set (autovacuum_enabled = off)")
    w = register(eng)
    submit_many(eng, 30, "hot")
    eng.execute("analyze pgflight.runs, pgflight.steps, pgflight.step_attempts")
    recipes = ["hot", "cold1", "cold2", "cold3"]
    for _ in range(6):  # past the plan cache's five custom plans
        claim(eng, w, 1, 60, recipes)
    with psycopg.connect(dsn, autocommit=True) as other:
        submit_many(other, 3000, "hot")
    plans = _plans(eng, lambda: claim(eng, w, 1, 60, recipes))
    walked = [
        p
        for p in plans
        if re.search(r"Index (Only )?Scan using step_attempts_ws_ready_idx[^\n]*\n\s*Filter: \(recipe", p)
    ]
    assert walked == []
    assert _seq_scans(plans) == []


def test_record_model_call_settles_on_a_generic_plan(eng: Conn) -> None:
    """
    record_model_call's budget settlement (lock the budgets in id order, check, move) runs on the
    plan the session cached, not on one made anew at every call (the
    planner preferred a custom plan for `id = any ($n)`, and planning it took 0.20-0.25 ms of
    every iteration, more than running it). A cached generic plan shows its parameters ($n) where
    a custom one shows the values; both read budgets by its primary key.
    """
    from pgflight import db

    db.create_workspace(eng, "agents", daily_usd_cap=1000)
    w = register(eng)
    # budgets as a deployment has them after a while (one per run and agent, one per workspace day)
    eng.execute(
        "insert into pgflight.budgets (scope, workspace_id, day, limit_usd, started_at)"
        " select 'workspace_day', w.id, date '2000-01-01' + g, 10, pgflight._now()"
        " from pgflight.workspaces w, generate_series(1, 20000) g where w.name = 'agents'"
    )
    eng.execute("analyze pgflight.budgets")
    plans = _plans(eng, lambda: _agent_iterations(eng, w, 8))  # past the five custom plans a cache tries
    settle_query = re.compile(r"with locked as materialized.*v_want", re.S)
    settle = [p for p in plans if settle_query.search(p.split("Query Text:", 1)[-1])]
    assert len(settle) == 8, "auto_explain showed no settlement"
    for p in settle[-3:]:
        conds = re.findall(r"Index Cond: \((.*)\)", p)
        assert conds and all(re.search(r"= ANY \(\$\d+\)", c) for c in conds), p
    assert not any(re.search(r"Seq Scan on budgets\b", p) for p in settle)
