"""
An agent's tool call held by a require_approval tool policy, decided in the inspector in a real
headless Chromium by a real operator login (scram): the approvals page shows the call's
arguments in a JSON textarea; text that is not JSON, or JSON that is not an object, is refused by
the server (nothing decided); the operator edits the arguments and approves, the parked agent
(a real worker process, the real ``anthropic`` SDK against a local Messages API server) runs the
tool once with the edited arguments, and the model sees its result.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg

import tool_policy_recipes as tpr
from agent_support import agent_env, fake_anthropic, message, tool_results  # noqa: F401
from inspector_browser import page, serve, shot  # noqa: F401  (fixtures)
from pgflight import db
from worker_support import one, wait_for, workers  # noqa: F401

STATUS = "select status from pgflight.step_status where step_id = %s"


def test_an_operator_edits_a_held_tool_calls_arguments_in_the_inspector_and_the_tool_runs_once_with_them(
    dsn: str, fake_anthropic: Any, workers: Any, logins: Any, serve: Any, page: Any
) -> None:
    def reply(body: dict[str, Any], n: int) -> tuple[int, dict[str, Any]]:
        if not any(m["role"] == "assistant" for m in body["messages"]):
            return 200, message(
                [
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "transfer",
                        "input": {"to": "acct-9", "usd": 900},
                    }
                ]
            )
        return 200, message([{"type": "text", "text": "done"}])

    server = fake_anthropic(reply)
    with psycopg.connect(dsn, autocommit=True) as conn:
        db.create_workspace(conn, "w")
        conn.execute("select pgflight.grant_workspace('pgf_operator_a', 'w', 'operator')")
        operator_dsn = logins.dsn("pgf_operator_a", dsn)
        with psycopg.connect(operator_dsn, autocommit=True) as op:
            db.set_tool_policy(op, "w", "transfer", "require_approval")
        sub = db.submit_run(
            conn,
            "w",
            "agent",
            {"task": "pay", "model": "claude-sonnet-4-6", "provider": "anthropic", "tools": ["transfer"]},
        )
        w = workers(dsn, "--poll", "0.3", recipes="tool_policy_recipes", env=agent_env(server.url))
        wait_for(
            lambda: one(conn, STATUS, sub.step_id) == "awaiting_approval",
            60,
            f"the park\n{w.output()[-2000:]}",
        )

        served = serve(operator_dsn)
        page.goto(served.url + "/approvals")
        form = page.locator("form.action.edit")
        assert form.count() == 1
        area = form.locator("textarea[name=arguments]")
        assert json.loads(area.input_value()) == {"to": "acct-9", "usd": 900}  # the arguments, shown

        # refused by the server: not JSON, then not an object (the browser sends what it is given)
        for text, why in (("{usd: 1", "not JSON"), ("[1, 2]", "must be a JSON object")):
            area.fill(text)
            form.locator("input[name=reason]").fill("try")
            with page.expect_response(lambda r: "/actions/approve" in r.url) as got:
                form.locator("button").click()
            assert got.value.status == 400 and why in got.value.text()
            page.goto(served.url + "/approvals")
            form = page.locator("form.action.edit")
            area = form.locator("textarea[name=arguments]")
        assert one(conn, "select count(*) from pgflight.approvals where decision is not null") == 0

        area.fill(json.dumps({"to": "acct-9", "usd": 90}))
        form.locator("input[name=reason]").fill("a tenth of it")
        shot(page, "approvals-edit-tool-arguments")
        form.locator("button").click()
        assert page.locator("#flash").inner_text() == f"step {sub.step_id}: approved with edited arguments"

        wait_for(
            lambda: one(conn, STATUS, sub.step_id) == "succeeded",
            60,
            f"the agent to end\n{w.output()[-2000:]}",
        )
        conn.execute(tpr.RAN_DDL)
        ran = conn.execute(
            f"select tool_use_id, arguments from {tpr.RAN_TABLE} where step_id = %s", [sub.step_id]
        ).fetchall()
        assert ran == [("toolu_1", {"to": "acct-9", "usd": 90})]  # once, with the edit
        assert len(server.requests) == 2
        (seen,) = tool_results(server.requests[1])
        assert json.loads(seen["content"])["transferred"] == 90 and not seen.get("is_error")
        decided = conn.execute(
            "select decision, actor, note, payload from pgflight.approvals where step_id = %s", [sub.step_id]
        ).fetchone()
        assert decided == (
            "approve",
            "pgf_operator_a",
            "a tenth of it",
            {"arguments": {"to": "acct-9", "usd": 90}},
        )
