"""
Fork an agent at an iteration (fork_agent), through real worker processes, the real `anthropic`
SDK and a local Messages API server: the fork's iterations before k are the original's (no model
call, USD 0, marked reused), iteration k is asked with the patch (system prompt, a tool result),
the fork has its own budget, and the original is untouched. The SQL function as real logins: only
an operator of the step's workspace may fork; every bad argument is refused with pgflight's
SQLSTATE and writes nothing; the events log keeps who forked, why, from where and at which iteration.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

import agent_recipes  # noqa: F401  (the agent recipe with the test tools)
import inspector_support as scenario
from agent_support import FakeAnthropic, fake_anthropic, message, tool_use  # noqa: F401
from inspector_browser import serve  # noqa: F401  (fixture)
from pgflight import db
from security_support import Conn, grant
from test_cli import pgflight
from test_security_attacks import as_login, su  # noqa: F401  (fixtures)
from worker_support import one, wait_for, workers  # noqa: F401


def _by_iteration(body: dict[str, Any], n: int) -> tuple[int, dict[str, Any]]:
    """Answer by the iteration the request is for (its assistant turns + 1): tool, tool, final."""
    iteration = 1 + sum(1 for m in body["messages"] if m["role"] == "assistant")
    if iteration <= 2:
        return 200, message(tool_use(f"tu{iteration}", "note", {"text": f"n{iteration}"}))
    return 200, message([{"type": "text", "text": f"done under {body.get('system', '')!r}"}])


def _env(server: FakeAnthropic) -> dict[str, str]:
    return {
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": server.url,
        "PGFLIGHT_AGENT_BACKOFF_S": "0.01",
    }


def _wait_done(conn: psycopg.Connection[Any], step_id: int, w: Any) -> str:
    status_of = "select status from pgflight.step_status where step_id = %s"
    return str(
        wait_for(
            lambda: (s := one(conn, status_of, step_id)) in ("succeeded", "dead_letter") and s,
            40,
            f"step {step_id}\n{w.output()[-2000:]}",
        )
    )


def _recorded(
    dsn: str,
    server: FakeAnthropic,
    workers: Any,
    workspace: str,
    *,
    task: str = "take notes",
    tools: tuple[str, ...] = ("note",),
) -> tuple[int, Any]:
    """A finished 3-iteration agent (two note calls, then an answer) in `workspace`; (step id, worker)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        sub = db.submit_run(
            conn,
            workspace,
            "agent",
            {
                "task": task,
                "system": "original prompt",
                "model": "claude-sonnet-4-6",
                "provider": "anthropic",
                "tools": list(tools),
                "max_usd": 1.0,
            },
        )
        w = workers(dsn, "--lease", "5", recipes="agent_recipes", env=_env(server))
        assert _wait_done(conn, sub.step_id, w) == "succeeded"
    return sub.step_id, w


def _costs(conn: psycopg.Connection[Any], agent_run_id: int) -> list[tuple[int, Decimal, bool]]:
    return [
        (int(r[0]), Decimal(r[1]), bool(r[2]))
        for r in conn.execute(
            "select iteration, usd, reused from pgflight.costs where agent_run_id = %s order by iteration",
            [agent_run_id],
        ).fetchall()
    ]


@pytest.mark.slow
def test_a_fork_reuses_the_iterations_before_k_and_asks_iteration_k_with_the_patched_prompt(
    dsn: str, fake_anthropic: Any, workers: Any, serve: Any
) -> None:
    server = fake_anthropic(_by_iteration)
    with psycopg.connect(dsn, autocommit=True) as conn:
        db.create_workspace(conn, "w")
    step_id, w = _recorded(dsn, server, workers, "w")
    assert len(server.requests) == 3
    original_third = server.requests[2]
    with psycopg.connect(dsn, autocommit=True) as conn:
        orig = db.agent.agent_run_of(conn, step_id)
        assert orig is not None and orig.iterations == 3 and orig.usd > 0
        fork = db.agent.fork_agent(conn, step_id, 3, {"system": "patched prompt"}, reason="try a new prompt")
        assert _wait_done(conn, fork.step_id, w) == "succeeded"
        # one model call for the fork: iteration 3, with the patched prompt and the original's turns
        assert len(server.requests) == 4
        asked = server.requests[3]
        assert asked["system"] == "patched prompt"
        assert asked["messages"] == original_third["messages"]
        # iterations 1 and 2 cost nothing and are marked reused; 3 is the fork's own call
        costs = _costs(conn, fork.agent_run_id)
        assert [(i, reused) for i, _, reused in costs] == [(1, True), (2, True), (3, False)]
        assert costs[0][1] == costs[1][1] == 0 and costs[2][1] > 0
        got = db.agent.agent_run_of(conn, fork.step_id)
        assert got is not None and got.usd == costs[2][1] and got.iterations == 3
        assert got.system_prompt == "patched prompt"
        result = one(
            conn,
            "select result from pgflight.step_attempts where step_id = %s and status = 'succeeded'",
            fork.step_id,
        )
        assert result["answer"] == "done under 'patched prompt'"
        # its own budget: a step budget of the fork's step (the original's max_usd), none of the original's
        budgets = conn.execute(
            "select b.step_id, b.spent_usd from pgflight.budgets b"
            " join pgflight.agent_runs a on b.id = any(a.budget_ids) where a.id = %s",
            [fork.agent_run_id],
        ).fetchall()
        assert [(b[0], Decimal(b[1])) for b in budgets] == [(fork.step_id, costs[2][1])]
        # the original is untouched
        after = db.agent.agent_run_of(conn, step_id)
        assert after is not None and (after.iterations, after.usd) == (orig.iterations, orig.usd)
        origin = conn.execute(
            "select forked_from, forked_at from pgflight.agent_runs where id = %s", [fork.agent_run_id]
        ).fetchone()
        assert origin == (orig.agent_run_id, 3)
        scenario.login_roles(conn)
    # the inspector (reader lane) shows where the fork came from, and the diff with the original
    served = serve(scenario.login_dsn(dsn, scenario.READER))
    page = _get(f"{served.url}/steps/{fork.step_id}")
    assert f'href="/steps/{step_id}">step {step_id}</a> at iteration 3' in page
    assert "try a new prompt" in page and "/fork-diff" in page
    assert f'href="/steps/{fork.step_id}">step {fork.step_id}</a> (at iteration 3)' in _get(
        f"{served.url}/steps/{step_id}"
    )
    diff = _get(f"{served.url}/steps/{fork.step_id}/fork-diff")
    assert "-original prompt" in diff and "+patched prompt" in diff


@pytest.mark.slow
def test_a_fork_with_a_patched_tool_result_sends_it_in_iteration_k(
    dsn: str, fake_anthropic: Any, workers: Any, tmp_path: Path
) -> None:
    """Through the CLI: pgflight fork STEP --at 2 --model ... --patch-file ... --reason ..."""
    server = fake_anthropic(_by_iteration)
    with psycopg.connect(dsn, autocommit=True) as conn:
        db.create_workspace(conn, "w")
    step_id, w = _recorded(dsn, server, workers, "w")
    patch = tmp_path / "patch.json"
    patch.write_text(json.dumps({"tool_results": {"tu1": "an edited result"}}))
    proc = pgflight(
        dsn,
        "fork",
        str(step_id),
        "--at",
        "2",
        "--model",
        "claude-haiku-4-5",
        "--patch-file",
        str(patch),
        "--reason",
        "what if the note had said otherwise",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    forked = json.loads(proc.stdout)
    beyond = pgflight(dsn, "fork", str(step_id), "--at", "9", "--reason", "past the end")
    assert beyond.returncode == 2 and "at_iteration must be from 1 to 3" in beyond.stderr, beyond.stderr
    with psycopg.connect(dsn, autocommit=True) as conn:
        fork = db.agent.agent_run_of(conn, forked["step_id"])
        assert fork is not None and fork.model == "claude-haiku-4-5"
        assert _wait_done(conn, fork.step_id, w) == "succeeded"
    # the fork asked iterations 2 and 3 (iteration 1 reused): two requests more than the original's 3
    assert len(server.requests) == 5
    second = server.requests[3]
    assert second["model"] == "claude-haiku-4-5"
    last_user = second["messages"][-1]
    assert last_user["role"] == "user"
    assert last_user["content"] == [
        {"type": "tool_result", "tool_use_id": "tu1", "content": "an edited result"}
    ]
    assert server.requests[3]["messages"][:2] == server.requests[1]["messages"][:2]


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as r:
        return str(r.read().decode())


def _state(conn: Conn, query: str, params: list[Any]) -> str | None:
    try:
        conn.execute(query, params)
    except psycopg.Error as e:
        return e.sqlstate
    return None


FORK = "select * from pgflight.fork_agent(%s, %s, %s, %s)"


@pytest.mark.slow
def test_only_an_operator_of_the_workspace_may_fork_and_every_bad_argument_writes_nothing(
    dsn: str, su: Conn, as_login: Callable[[str], Conn], fake_anthropic: Any, workers: Any
) -> None:
    server = fake_anthropic(_by_iteration)
    step_id, _ = _recorded(dsn, server, workers, "A")
    grant(su, "pgf_operator_a", "A", "operator")
    grant(su, "pgf_operator_b", "B", "operator")
    grant(su, "pgf_reader_a", "A", "reader")
    grant(su, "pgf_worker_a", "A", "worker")
    runs_before = one(su, "select count(*) from pgflight.runs")
    ok = [step_id, 2, Jsonb({"system": "s"}), "a reason"]
    # an operator with no grant on the step's workspace reads it as an unknown step (ZF003), not ZF012
    assert _state(as_login("pgf_operator_b"), FORK, ok) == "ZF003"
    assert _state(as_login("pgf_reader_a"), FORK, ok) == "42501"
    assert _state(as_login("pgf_worker_a"), FORK, ok) == "42501"
    me = as_login("pgf_operator_a")
    cap = int(one(su, "select max_input_bytes from pgflight.settings"))
    bad: list[tuple[list[Any], str]] = [
        ([None, 2, Jsonb({}), "r"], "22023"),
        ([step_id, None, Jsonb({}), "r"], "22023"),
        ([step_id, 0, Jsonb({}), "r"], "22023"),
        ([step_id, 4, Jsonb({}), "r"], "22023"),  # the original made 3 iterations
        ([step_id, 2, Jsonb({}), None], "22023"),
        ([step_id, 2, Jsonb({}), "  "], "22023"),
        ([step_id, 2, Jsonb({"sytem": "typo"}), "r"], "22023"),
        ([step_id, 2, Jsonb({"max_usd": -1}), "r"], "22023"),
        ([step_id, 2, Jsonb({"tools": "note"}), "r"], "22023"),
        ([step_id, 2, Jsonb([1]), "r"], "22023"),
        ([step_id, 2, Jsonb({"tool_results": {"tu9": "x"}}), "r"], "22023"),  # not a call of iteration 1
        ([step_id, 2, Jsonb({"tool_results": {"tu1": 5}}), "r"], "22023"),
        ([step_id, 2, Jsonb({"system": "x" * (cap + 1)}), "r"], "ZF005"),
        ([step_id + 10_000, 2, Jsonb({}), "r"], "ZF003"),
    ]
    for params, code in bad:
        assert _state(me, FORK, params) == code, params[1:3]
    assert one(su, "select count(*) from pgflight.runs") == runs_before
    # a step that is not an agent
    plain = su.execute("select step_id from pgflight.submit_run('A', 'plain', '{}')").fetchone()
    assert plain is not None
    assert _state(me, FORK, [plain[0], 1, Jsonb({}), "r"]) == "ZF006"

    row = me.execute(FORK, ok).fetchone()
    assert row is not None
    run_id, fork_step = row[0], row[1]
    ev = su.execute(
        "select actor, detail from pgflight.events where run_id = %s and reason = 'forked'", [run_id]
    ).fetchone()
    assert ev is not None and ev[0] == "pgf_operator_a"
    assert ev[1]["note"] == "a reason" and ev[1]["from_step"] == step_id and ev[1]["at_iteration"] == 2
    assert ev[1]["patched"] == ["system"]
    made = su.execute(
        "select actor, detail ->> 'fork_step' from pgflight.events"
        " where step_id = %s and reason = 'fork_made'",
        [step_id],
    ).fetchone()
    assert made == ("pgf_operator_a", str(fork_step))


def _parent_or_child(body: dict[str, Any], n: int) -> tuple[int, dict[str, Any]]:
    """The parent delegates one sub-task then answers; the sub-agent answers as _by_iteration."""
    if "sub-task" in json.dumps(body["messages"][0]):
        return _by_iteration(body, n)
    if not any(m["role"] == "assistant" for m in body["messages"]):
        return 200, message(tool_use("td1", "delegate", {"tasks": [{"task": "the sub-task"}]}))
    return 200, message([{"type": "text", "text": "the parent is done"}])


@pytest.mark.slow
def test_a_fork_of_a_sub_agent_is_a_new_root_run_and_leaves_the_parents_tree_untouched(
    dsn: str, fake_anthropic: Any, workers: Any
) -> None:
    """
    A sub-agent (a child `agent` step spawned by the delegate tool) forked at an iteration becomes a
    new run of its own, not a child of the original parent: the parent has already consumed the
    sub-agent's answer, so a new child would re-open a finished tree and charge its budget. The
    fork's step has no parent, its run is new, its budget is its own, and the parent's run keeps
    exactly its steps, statuses and spend.
    """
    server = fake_anthropic(_parent_or_child)
    with psycopg.connect(dsn, autocommit=True) as conn:
        db.create_workspace(conn, "w")
    parent, w = _recorded(dsn, server, workers, "w", task="the parent task", tools=("delegate", "note"))
    with psycopg.connect(dsn, autocommit=True) as conn:
        parent_run = one(conn, "select run_id from pgflight.steps where id = %s", parent)
        child = one(conn, "select id from pgflight.steps where parent_id = %s", parent)
        original = db.agent.agent_run_of(conn, child)
        assert original is not None and original.iterations == 3
        tree = (
            "select s.id, st.status from pgflight.steps s join pgflight.step_status st on st.step_id = s.id"
        )
        before = conn.execute(tree + " where s.run_id = %s order by s.id", [parent_run]).fetchall()
        spent = "select coalesce(sum(usd), 0) from pgflight.costs where run_id = %s"
        spent_before = one(conn, spent, parent_run)
        asked_before = len(server.requests)

        fork = db.agent.fork_agent(conn, child, 2, {"system": "patched prompt"}, reason="retry the sub-task")
        assert fork.run_id != parent_run
        row = conn.execute(
            "select s.parent_id, s.recipe, r.recipe from pgflight.steps s"
            " join pgflight.runs r on r.id = s.run_id where s.id = %s",
            [fork.step_id],
        ).fetchone()
        assert row == (None, "agent", "agent"), "the fork is the root step of its own run"
        assert _wait_done(conn, fork.step_id, w) == "succeeded"
        # iterations 2 and 3 asked with the patched prompt; iteration 1 reused
        assert len(server.requests) == asked_before + 2
        assert {r["system"] for r in server.requests[asked_before:]} == {"patched prompt"}
        assert "sub-task" in json.dumps(server.requests[asked_before]["messages"][0])
        # the parent's tree: the same steps, statuses and spend; nothing woke the parent again
        assert conn.execute(tree + " where s.run_id = %s order by s.id", [parent_run]).fetchall() == before
        assert one(conn, spent, parent_run) == spent_before
        resumed = "select count(*) from pgflight.run_events where step_id = %s and reason = 'parent_resumed'"
        assert one(conn, resumed, parent) == 1
        # its own budget: the sub-agent was charged to its parent's tree budget, the fork is not
        budgets = (
            "select b.step_id from pgflight.budgets b join pgflight.agent_runs a on b.id = any(a.budget_ids)"
            " where a.id = %s"
        )
        assert (parent,) in conn.execute(budgets, [original.agent_run_id]).fetchall()
        assert (parent,) not in conn.execute(budgets, [fork.agent_run_id]).fetchall()
