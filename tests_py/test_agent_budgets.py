"""
Agent budgets: per workspace (C24, atomic admission), per tree (three sub-agents racing), the
enforce_budgets sweep (a tree over its wall-time cap while its parent sleeps, lapsed reservations).
"""

from __future__ import annotations

import threading
import time
from decimal import Decimal
from typing import Any

import psycopg
import pytest

import agent_recipes  # noqa: F401
from agent_support import fake_anthropic, message, tool_use  # noqa: F401
from pgflight import db, errors
from worker_support import one, wait_for, workers  # noqa: F401


def _claim_all(conn: psycopg.Connection[Any], wid: int, n: int, recipe: str) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + 10
    while len(got) < n and time.monotonic() < deadline:
        got += db.claim_batch(conn, wid, batch_size=n - len(got), lease_s=60, recipes=[recipe])
    assert len(got) == n
    for c in got:
        db.start_step(conn, c.attempt_id, c.fencing_token)
    return got


def test_c24_five_children_at_9_90_of_10_exactly_one_admitted(dsn: str, connect: Any) -> None:
    """
    C24: 5 concurrent admissions of 0.09 USD against 9.90 of 10.00: exactly one; the rest end and
    wake the parent.
    """
    conn = connect()
    db.create_workspace(conn, "w", daily_usd_cap=10.00)
    parent = db.submit_run(conn, "w", "fanout", {})
    wid = db.register_worker(conn, "t")
    (pc,) = _claim_all(conn, wid, 1, "fanout")
    db.spawn_children(
        conn,
        pc.attempt_id,
        pc.fencing_token,
        [{"key": f"c{i}", "recipe": "agent", "input": {"task": f"c{i}"}} for i in range(5)],
    )
    kids = _claim_all(conn, wid, 5, "agent")
    runs = [
        db.agent.begin_agent_run(conn, k.attempt_id, k.fencing_token, model="claude-haiku-4-5", task="t")
        for k in kids
    ]
    conn.execute(
        "insert into pgflight.budgets (scope, workspace_id, day, limit_usd, spent_usd) "
        "select 'workspace_day', id, (pgflight._now() at time zone 'UTC')::date, 10.00, 9.90 "
        "from pgflight.workspaces where name = 'w'"
    )

    barrier = threading.Barrier(5)
    outcome: dict[int, Any] = {}

    def admit(i: int) -> None:
        c = connect()
        barrier.wait()
        try:
            outcome[i] = db.agent.reserve_budget(
                c, kids[i].attempt_id, kids[i].fencing_token, runs[i].agent_run_id, 1, Decimal("0.09")
            )
        except errors.BudgetExceeded as e:
            outcome[i] = e

    threads = [threading.Thread(target=admit, args=(i,)) for i in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    admitted = [i for i, o in outcome.items() if not isinstance(o, Exception)]
    assert len(admitted) == 1
    refused = [o for o in outcome.values() if isinstance(o, errors.BudgetExceeded)]
    assert len(refused) == 4 and all("workspace_day" in (e.detail or "") and e.hint for e in refused)
    spent, reserved = conn.execute(
        "select spent_usd, reserved_usd from pgflight.budgets where scope = 'workspace_day'"
    ).fetchone() or (None, None)
    assert (spent, reserved) == (Decimal("9.90"), Decimal("0.09"))

    # the refused children end (the loop fails them non-retryably as budget_exhausted) ...
    for i in set(range(5)) - set(admitted):
        db.fail_step(
            conn,
            kids[i].attempt_id,
            kids[i].fencing_token,
            {"type": "BudgetExhausted", "message": "budget_exhausted"},
            retryable=False,
        )
    # ... the admitted one records its call: the reservation is replaced by the actual cost
    (a,) = admitted
    rec = db.agent.record_model_call(
        conn,
        kids[a].attempt_id,
        kids[a].fencing_token,
        runs[a].agent_run_id,
        1,
        [{"type": "text", "text": "done"}],
        {"input_tokens": 20_000, "output_tokens": 4_000},
        "claude-haiku-4-5",
    )
    assert rec.usd == Decimal("0.04")
    assert conn.execute(
        "select spent_usd, reserved_usd from pgflight.budgets where scope = 'workspace_day'"
    ).fetchone() == (Decimal("9.94"), Decimal("0"))
    db.complete_step(conn, kids[a].attempt_id, kids[a].fencing_token, {"answer": "done"})
    assert one(conn, "select status from pgflight.step_status where step_id = %s", parent.step_id) == "queued"
    assert [r.status for r in db.children_results(conn, parent.step_id)].count("dead_letter") == 4


def test_reclaimed_attempt_reservation_is_released_by_the_sweep(dsn: str, connect: Any) -> None:
    """C24: a reservation held by an attempt whose lease lapsed is released by enforce_budgets."""
    conn = connect()
    db.create_workspace(conn, "w", daily_usd_cap=1.00)
    db.submit_run(conn, "w", "agent", {"task": "t"})
    wid = db.register_worker(conn, "t")
    (k,) = _claim_all(conn, wid, 1, "agent")
    run = db.agent.begin_agent_run(conn, k.attempt_id, k.fencing_token, model="claude-haiku-4-5", task="t")
    db.agent.reserve_budget(conn, k.attempt_id, k.fencing_token, run.agent_run_id, 1, Decimal("0.7"))
    with pytest.raises(errors.BudgetExceeded):  # a second tree cannot get 0.7 more
        conn2 = connect()
        db.submit_run(conn2, "w", "agent", {"task": "t2"})
        (k2,) = _claim_all(conn2, wid, 1, "agent")
        r2 = db.agent.begin_agent_run(
            conn2, k2.attempt_id, k2.fencing_token, model="claude-haiku-4-5", task="t2"
        )
        db.agent.reserve_budget(conn2, k2.attempt_id, k2.fencing_token, r2.agent_run_id, 1, Decimal("0.7"))
    conn.execute(
        "update pgflight.step_attempts set lease_expires_at = pgflight._now() - interval '1 s' where id = %s",
        [k.attempt_id],
    )
    assert db.reclaim_expired(conn) >= 1
    assert db.agent.enforce_budgets(conn) >= 1
    assert one(conn, "select reserved_usd from pgflight.budgets where scope = 'workspace_day'") == 0
    assert (
        one(conn, "select reserved_attempt_id from pgflight.agent_runs where id = %s", run.agent_run_id)
        is None
    )
    with pytest.raises(errors.LeaseLost):  # the lapsed attempt can no longer record anything
        db.agent.record_model_call(
            conn, k.attempt_id, k.fencing_token, run.agent_run_id, 1, [], {}, "offline"
        )


def test_tree_over_wall_time_is_cancelled_while_parent_sleeps(dsn: str, connect: Any) -> None:
    """enforce_budgets cancels an agent's tree past its max_wall_s while the agent waits for its children."""
    conn = connect()
    conn.execute("set pgflight.fake_now = '2026-12-01 12:00:00+00'")
    db.create_workspace(conn, "w")
    sub = db.submit_run(conn, "w", "agent", {"task": "t"})
    wid = db.register_worker(conn, "t")
    (p,) = _claim_all(conn, wid, 1, "agent")
    db.agent.begin_agent_run(conn, p.attempt_id, p.fencing_token, model="offline", task="t", max_wall_s=60)
    db.spawn_children(
        conn, p.attempt_id, p.fencing_token, [{"key": "c", "recipe": "agent", "input": {"task": "c"}}]
    )
    (c,) = _claim_all(conn, wid, 1, "agent")
    assert db.agent.enforce_budgets(conn) == 0
    conn.execute("set pgflight.fake_now = '2026-12-01 12:01:01+00'")
    assert db.agent.enforce_budgets(conn) == 1
    assert one(conn, "select status from pgflight.step_status where step_id = %s", sub.step_id) == "cancelled"
    assert (
        one(conn, "select status from pgflight.step_attempts where id = %s", c.attempt_id)
        == "cancel_requested"
    )
    assert db.agent.enforce_budgets(conn) == 0  # once


def _tree_reply(child_calls: list[int]) -> Any:
    def reply(body: dict[str, Any], n: int) -> tuple[int, dict[str, Any]]:
        task = body["messages"][0]["content"][0]["text"]
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if task == "PARENT":
            if turn == 0:
                return 200, message(
                    tool_use("toolu_del", "delegate", {"tasks": [{"task": f"child {i}"} for i in range(3)]})
                )
            return 200, message([{"type": "text", "text": "merged"}])
        child_calls.append(1)
        time.sleep(0.02)
        return 200, message(
            tool_use(f"toolu_{turn}", "note", {"text": "x"}), input_tokens=1000, output_tokens=200
        )

    return reply


@pytest.mark.slow
def test_tree_budget_three_subagents_racing(dsn: str, fake_anthropic: Any, workers: Any) -> None:
    """Three sub-agents spend from their parent's max_usd at once: spent + reserved never passes the cap.
    The documented overshoot bound is, per call admitted concurrently, its actual cost minus its
    estimate; here each reservation (est_usd 0.006) equals the call's cost, so the bound is 0. Each
    child ends budget_exhausted and wakes the parent, which is refused in turn."""
    calls: list[int] = []
    server = fake_anthropic(_tree_reply(calls))
    env = {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": server.url}
    limit = Decimal("0.1")
    with psycopg.connect(dsn, autocommit=True) as conn:
        db.create_workspace(conn, "w")
        sub = db.submit_run(
            conn,
            "w",
            "agent",
            {
                "task": "PARENT",
                "model": "claude-sonnet-4-6",
                "provider": "anthropic",
                "tools": ["delegate", "note"],
                "max_usd": float(limit),
                "max_tokens": 256,
                "est_usd": 0.006,
            },
        )
        workers(dsn, "--lease", "5", "--concurrency", "4", recipes="agent_recipes", env=env)
        samples = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            row = conn.execute(
                "select spent_usd, reserved_usd from pgflight.budgets where scope = 'step' and step_id = %s",
                [sub.step_id],
            ).fetchone()
            if row:
                samples.append(row[0] + row[1])
            if one(conn, "select status from pgflight.step_status where step_id = %s", sub.step_id) in (
                "succeeded",
                "dead_letter",
            ):
                break
            time.sleep(0.01)
        assert samples and max(samples) <= limit
        kids = db.children_results(conn, sub.step_id)
        assert len(kids) == 3 and all(
            k.status == "dead_letter" and "budget_exhausted" in k.error["message"] for k in kids
        )
        spent = one(
            conn, "select spent_usd from pgflight.budgets where scope = 'step' and step_id = %s", sub.step_id
        )
        per_call = (Decimal(1000) * 3 + 200 * 15) / 1_000_000
        assert spent == per_call * (len(calls) + 1)  # the parent's first call and every child call
        assert spent <= limit
        assert one(conn, "select sum(usd) from pgflight.costs where run_id = %s", sub.run_id) == spent
