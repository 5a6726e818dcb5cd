"""
Tool policies the DBA owns, through real worker processes and the real ``anthropic`` SDK against
a local Messages API server: a denied tool never runs and the model gets the policy's error as the
tool result; a tool under require_approval parks the step (no lease held) with the arguments as the
gate's request, an operator login approves with edited arguments, and the tool runs once with the
edit while the model sees its result; the transcript records the original arguments, the edit
and who made it. Policies are set and read by real operator and reader logins of the workspace;
a login of another workspace is refused.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

import tool_policy_recipes as tpr
from agent_support import agent_env, fake_anthropic, message, tool_results  # noqa: F401
from pgflight import db, errors
from worker_support import one, wait_for, workers  # noqa: F401

STATUS = "select status from pgflight.step_status where step_id = %s"


def scripted(calls: list[dict[str, Any]]) -> Callable[[dict[str, Any], int], tuple[int, dict[str, Any]]]:
    """The model asks for `calls` (one tool_use block each) in its first turn, then answers 'done'."""

    def reply(body: dict[str, Any], n: int) -> tuple[int, dict[str, Any]]:
        if not any(m["role"] == "assistant" for m in body["messages"]):
            return 200, message([{"type": "tool_use", **c} for c in calls])
        return 200, message([{"type": "text", "text": "done"}])

    return reply


def submit_agent(conn: psycopg.Connection[Any], task: str) -> Any:
    return db.submit_run(
        conn,
        "w",
        "agent",
        {
            "task": task,
            "model": "claude-sonnet-4-6",
            "provider": "anthropic",
            "tools": ["transfer", "lookup"],
        },
    )


def ran(conn: psycopg.Connection[Any], step_id: int) -> list[tuple[str, str, Any]]:
    conn.execute(tpr.RAN_DDL)
    return [
        (r[0], r[1], r[2])
        for r in conn.execute(
            f"select tool_use_id, tool, arguments from {tpr.RAN_TABLE} where step_id = %s order by n",
            [step_id],
        ).fetchall()
    ]


def test_a_denied_tool_never_runs_and_the_model_is_told_the_policy_denied_it(
    dsn: str, fake_anthropic: Any, workers: Any, logins: Any
) -> None:
    server = fake_anthropic(
        scripted(
            [
                {"id": "toolu_1", "name": "transfer", "input": {"to": "acct-9", "usd": 50}},
                {"id": "toolu_2", "name": "lookup", "input": {"account": "acct-9"}},
            ]
        )
    )
    with psycopg.connect(dsn, autocommit=True) as conn:
        db.create_workspace(conn, "w")
        conn.execute("select pgflight.grant_workspace('pgf_operator_a', 'w', 'operator')")
        with psycopg.connect(logins.dsn("pgf_operator_a", dsn), autocommit=True) as op:
            got = db.set_tool_policy(op, "w", "transfer", "deny")
        assert (got.tool_name, got.action, got.updated_by) == ("transfer", "deny", "pgf_operator_a")
        sub = submit_agent(conn, "pay acct-9")
        w = workers(dsn, "--poll", "0.3", recipes="tool_policy_recipes", env=agent_env(server.url))
        wait_for(
            lambda: one(conn, STATUS, sub.step_id) == "succeeded",
            60,
            f"the agent to end\n{w.output()[-2000:]}",
        )
        assert [(r[0], r[1]) for r in ran(conn, sub.step_id)] == [("toolu_2", "lookup")]  # transfer never ran
        denied, looked = tool_results(server.requests[1])
        assert denied["tool_use_id"] == "toolu_1" and denied["is_error"] is True
        assert "tool policy of this workspace denies transfer" in denied["content"]
        assert looked["tool_use_id"] == "toolu_2" and not looked.get("is_error")
        agent = db.agent.agent_run_of(conn, sub.step_id)
        assert agent is not None and agent.tool_calls == 1  # the denied call is not counted


def test_require_approval_parks_and_the_tool_runs_once_with_the_approvers_edited_arguments(
    dsn: str, fake_anthropic: Any, workers: Any, logins: Any
) -> None:
    server = fake_anthropic(
        scripted(
            [
                {"id": "toolu_1", "name": "lookup", "input": {"account": "acct-9"}},
                {"id": "toolu_2", "name": "transfer", "input": {"to": "acct-9", "usd": 5000}},
            ]
        )
    )
    with psycopg.connect(dsn, autocommit=True) as conn:
        db.create_workspace(conn, "w")
        conn.execute("select pgflight.grant_workspace('pgf_operator_a', 'w', 'operator')")
        conn.execute("select pgflight.grant_workspace('pgf_reader_a', 'w', 'reader')")
        with psycopg.connect(logins.dsn("pgf_operator_a", dsn), autocommit=True) as op:
            db.set_tool_policy(op, "w", "transfer", "require_approval", when="$.usd ? (@ > 100)")
        with psycopg.connect(logins.dsn("pgf_reader_a", dsn), autocommit=True) as rd:
            assert [(p.tool_name, p.action) for p in db.tool_policies(rd, "w")] == [
                ("transfer", "require_approval")
            ]
            with pytest.raises(psycopg.Error) as refused:
                db.set_tool_policy(rd, "w", "transfer", "allow")
            assert refused.value.sqlstate == "42501"  # a reader may read the policies, not set them
        sub = submit_agent(conn, "pay acct-9")
        w = workers(dsn, "--poll", "0.3", recipes="tool_policy_recipes", env=agent_env(server.url))
        wait_for(
            lambda: one(conn, STATUS, sub.step_id) == "awaiting_approval",
            60,
            f"the park\n{w.output()[-2000:]}",
        )
        # parked (awaiting_approval holds no lease): the lookup before it ran, transfer did not
        assert [(r[0], r[1]) for r in ran(conn, sub.step_id)] == [("toolu_1", "lookup")]
        with psycopg.connect(logins.dsn("pgf_operator_a", dsn), autocommit=True) as op:
            gates = op.execute(
                "select gate_key, request from pgflight.pending_approvals() where step_id = %s", [sub.step_id]
            ).fetchall()
            assert gates == [
                (
                    "tool:toolu_2",
                    {
                        "tool": "transfer",
                        "tool_use_id": "toolu_2",
                        "arguments": {"to": "acct-9", "usd": 5000},
                    },
                )
            ]
            with pytest.raises(errors.BadArgument):
                db.approve(op, sub.step_id, "approve", "ops", gate_key="tool:toolu_2", payload={"args": {}})
            db.approve(
                op,
                sub.step_id,
                "approve",
                "ops",
                note="capped at 100",
                gate_key="tool:toolu_2",
                payload={"arguments": {"to": "acct-9", "usd": 100}},
            )
        wait_for(
            lambda: one(conn, STATUS, sub.step_id) == "succeeded",
            60,
            f"the agent to end\n{w.output()[-2000:]}",
        )
        assert ran(conn, sub.step_id) == [
            ("toolu_1", "lookup", {"account": "acct-9"}),
            ("toolu_2", "transfer", {"to": "acct-9", "usd": 100}),  # once, with the edit
        ]
        assert len(server.requests) == 2  # the model was not asked again while the step was parked
        looked, moved = tool_results(server.requests[1])
        assert looked["tool_use_id"] == "toolu_1"
        assert moved["tool_use_id"] == "toolu_2" and json.loads(moved["content"])["transferred"] == 100
        row = one(
            conn,
            "select t.content from pgflight.traces t join pgflight.agent_runs r on r.id = t.agent_run_id"
            " where r.step_id = %s and t.block_type = 'tool_approval'",
            sub.step_id,
        )
        assert row["requested_arguments"] == {"to": "acct-9", "usd": 5000}
        assert row["arguments"] == {"to": "acct-9", "usd": 100}
        assert (row["verdict"], row["decided_by"]) == ("edited", "pgf_operator_a")
        assert row["note"].startswith("capped at 100")
