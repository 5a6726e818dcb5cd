"""
The agent step type end to end: the real `anthropic` SDK against a local Messages API server,
durable iterations, resume after kill -9, interrupted tools, costs.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest

import agent_recipes  # noqa: F401  (tools note, crash, charge)
from agent_support import FakeAnthropic, error_body, fake_anthropic, message, tool_use  # noqa: F401
from pgflight import db
from pgflight.agent import providers as prov
from pgflight.agent.loop import AgentInput, AgentLoop, BudgetExhausted
from pgflight.recipes import StepContext
from worker_support import ChargeCounter, one, wait_for, workers  # noqa: F401


def run_inline(
    dsn: str,
    inp: dict[str, Any],
    *,
    provider: prov.Provider | None = None,
    workspace: str = "w",
    run_options: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], int]:
    """Submit an agent run, claim it here and run the loop in this process; return (result, step_id)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        db.create_workspace(conn, workspace)
        sub = db.submit_run(conn, workspace, "agent", inp, options=run_options or {})
        wid = db.register_worker(conn, "inline")
        (claim,) = db.claim_batch(conn, wid, batch_size=1, lease_s=60, recipes=["agent"])
        db.start_step(conn, claim.attempt_id, claim.fencing_token)
        ctx = StepContext(
            claim, AgentInput.model_validate(claim.input), call=lambda fn, *a, **k: fn(conn, *a, **k)
        )
        result = AgentLoop(ctx, ctx.input, provider=provider).run()
        db.complete_step(conn, claim.attempt_id, claim.fencing_token, result)
        return result, sub.step_id


def test_anthropic_sdk_tool_use_errors_and_max_tokens(
    dsn: str, fake_anthropic: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """
    tool_use, then 429, 500 and 529 (retried within the iteration, on the record), then a
    max_tokens stop.
    """

    def reply(body: dict[str, Any], n: int) -> tuple[int, dict[str, Any]]:
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if turn == 0:
            return 200, message(
                tool_use("toolu_a", "note", {"text": "hi"}, text="Noting."),
                input_tokens=1200,
                output_tokens=300,
                cache_creation=100,
                cache_read=50,
            )
        if n in (2, 3, 4):
            return {2: 429, 3: 500, 4: 529}[n], error_body({2: 429, 3: 500, 4: 529}[n])
        return 200, message(
            [{"type": "text", "text": "The note says HI"}],
            stop_reason="max_tokens",
            input_tokens=1500,
            output_tokens=64,
        )

    server = fake_anthropic(reply)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("PGFLIGHT_AGENT_BACKOFF_S", "0.01")
    provider = prov.AnthropicProvider(base_url=server.url)
    result, step_id = run_inline(
        dsn,
        {
            "task": "note hi",
            "model": "claude-sonnet-4-6",
            "tools": ["note"],
            "provider": "anthropic",
            "max_tokens": 64,
        },
        provider=provider,
    )
    assert result["answer"] == "The note says HI"
    assert result["stop_reason"] == "max_tokens"
    assert len(server.requests) == 5
    # the second successful request carried the exact first response and the tool result
    last = server.requests[-1]["messages"]
    assert last[1]["content"][1] == {
        "type": "tool_use",
        "id": "toolu_a",
        "name": "note",
        "input": {"text": "hi"},
    }
    assert last[2]["content"] == [{"type": "tool_result", "tool_use_id": "toolu_a", "content": "HI"}]
    assert server.requests[0]["tools"][0]["input_schema"]["properties"]["text"]["type"] == "string"
    with psycopg.connect(dsn, autocommit=True) as conn:
        agent = db.agent.agent_run_of(conn, step_id)
        assert agent is not None and agent.iterations == 2 and agent.tool_calls == 1
        errs = conn.execute(
            "select content->>'status' from pgflight.traces where agent_run_id = %s"
            " and block_type = 'api_error' order by seq",
            [agent.agent_run_id],
        ).fetchall()
        assert [e[0] for e in errs] == ["429", "500", "529"]
        costs = conn.execute(
            "select iteration, input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens,"
            " usd, stop_reason, retries from pgflight.costs where agent_run_id = %s order by iteration",
            [agent.agent_run_id],
        ).fetchall()
        # claude-sonnet-4-6: 3 / 15 / 3.75 / 0.30 USD per million tokens
        assert costs[0] == (
            1,
            1200,
            300,
            100,
            50,
            (1200 * 3 + 300 * 15 + Decimal("100") * Decimal("3.75") + Decimal("50") * Decimal("0.30"))
            / 1_000_000,
            "tool_use",
            0,
        )
        assert costs[1][5] == Decimal(1500 * 3 + 64 * 15) / 1_000_000
        assert costs[1][6:] == ("max_tokens", 3)
        assert agent.usd == costs[0][5] + costs[1][5]


def test_cost_rows_equal_usage_times_price(dsn: str) -> None:
    """Every costs row is usage x model_prices / 1e6, for several models and cache fields."""
    script = [
        message(
            tool_use(f"toolu_{i}", "note", {"text": str(i)}),
            model=m,
            input_tokens=1000 * i,
            output_tokens=77 * i,
            cache_creation=10 * i,
            cache_read=5 * i,
        )
        for i, m in enumerate(["claude-opus-4-5", "claude-haiku-4-5-20251001", "claude-sonnet-4-6"], 1)
    ]
    script.append(message([{"type": "text", "text": "done"}], model="claude-opus-4-1"))
    run_inline(
        dsn,
        {"task": "t", "model": "claude-sonnet-4-6", "tools": ["note"], "est_usd": 0},
        provider=prov.ScriptedProvider(script),
    )
    with psycopg.connect(dsn, autocommit=True) as conn:
        bad = conn.execute("""
            select c.iteration from pgflight.costs c
              cross join lateral (select p.* from pgflight.model_prices p where c.model like p.model || '%%'
                                   order by length(p.model) desc limit 1) p
             where c.usd <> (c.input_tokens * p.input_usd_per_mtok + c.output_tokens * p.output_usd_per_mtok
                             + c.cache_creation_tokens * p.cache_write_usd_per_mtok
                             + c.cache_read_tokens * p.cache_read_usd_per_mtok) / 1000000""").fetchall()
        assert bad == []
        assert one(conn, "select count(*) from pgflight.costs") == 4
        assert (
            one(conn, "select usd from pgflight.costs where iteration = 2")
            == (Decimal(2000) * 1 + 154 * 5 + Decimal(20) * Decimal("1.25") + Decimal(10) * Decimal("0.10"))
            / 1_000_000
        )


def test_an_iteration_is_two_writes_and_a_mark_per_tool_call_with_parallel_results_batched(dsn: str) -> None:
    """Per iteration the loop makes two writes, record_model_call and complete_tool_calls (every
    result of the iteration plus the next call's budget admission), and marks each tool call in
    flight (mark_tool_call) just before it starts, never before."""
    two_tools = [
        message(
            [
                {"type": "tool_use", "id": f"toolu_{i}a", "name": "note", "input": {"text": f"{i}a"}},
                {"type": "tool_use", "id": f"toolu_{i}b", "name": "note", "input": {"text": f"{i}b"}},
            ]
        )
        for i in (1, 2)
    ]
    script = [*two_tools, message([{"type": "text", "text": "done"}])]
    with psycopg.connect(dsn, autocommit=True) as conn:
        db.create_workspace(conn, "w", daily_usd_cap=100)
        db.submit_run(conn, "w", "agent", {"task": "t", "model": "claude-haiku-4-5", "tools": ["note"]})
        wid = db.register_worker(conn, "inline")
        (claim,) = db.claim_batch(conn, wid, batch_size=1, lease_s=60, recipes=["agent"])
        db.start_step(conn, claim.attempt_id, claim.fencing_token)
        called: list[str] = []

        def call(fn: Any, *a: Any, **k: Any) -> Any:
            called.append(fn.__name__)
            return fn(conn, *a, **k)

        inp = AgentInput.model_validate({**claim.input, "est_usd": 0.01})
        result = AgentLoop(
            StepContext(claim, inp, call=call), inp, provider=prov.ScriptedProvider(script)
        ).run()
        assert result["answer"] == "done" and result["iterations"] == 3
        assert called == [
            "begin_agent_run",
            "reserve_budget",  # once per attempt: the first call's admission
            "record_model_call",
            "mark_tool_call",
            "mark_tool_call",
            "complete_tool_calls",
            "record_model_call",
            "mark_tool_call",
            "mark_tool_call",
            "complete_tool_calls",
            "record_model_call",
        ]
        rows = conn.execute(
            "select tool_use_id, status, content->>'content' from pgflight.traces"
            " where block_type = 'tool_result' order by iteration, seq"
        ).fetchall()
        assert rows == [(f"toolu_{i}{x}", "completed", f"{i}{x}".upper()) for i in (1, 2) for x in "ab"]
        assert one(conn, "select tool_calls from pgflight.agent_runs") == 4
        assert conn.execute(
            "select spent_usd > 0, reserved_usd from pgflight.budgets where scope = 'workspace_day'"
        ).fetchone() == (True, 0)


def test_offline_model_is_deterministic_and_free(dsn: str) -> None:
    """The default offline policy calls each tool once then ends; same input, same transcript, 0 USD."""
    r1, _ = run_inline(dsn, {"task": "say", "tools": ["note"]})
    r2, _ = run_inline(dsn, {"task": "say", "tools": ["note"]})
    assert r1["iterations"] == 2 and r1["usd"] == 0
    with psycopg.connect(dsn, autocommit=True) as conn:
        t1 = [(r.iteration, r.seq, r.content) for r in db.agent.agent_transcript(conn, r1["agent_run_id"])]
        t2 = [(r.iteration, r.seq, r.content) for r in db.agent.agent_transcript(conn, r2["agent_run_id"])]
    assert t1 == t2


def test_per_run_iteration_cap_dead_letters_with_budget_exhausted(dsn: str) -> None:
    """max_iterations = 2: the third model call is refused (ZF007) and the agent ends budget_exhausted."""
    script = [message(tool_use(f"toolu_{i}", "note", {"text": "x"})) for i in range(5)]
    with pytest.raises(BudgetExhausted, match=r"budget_exhausted.*max_iterations|may make 2 model calls"):
        run_inline(
            dsn,
            {
                "task": "loop",
                "model": "claude-haiku-4-5",
                "tools": ["note"],
                "max_iterations": 2,
                "est_usd": 0,
            },
            provider=prov.ScriptedProvider(script),
        )


def test_per_run_tool_call_cap(dsn: str) -> None:
    """max_tool_calls = 1: the second tool call is refused before it runs."""
    script = [message(tool_use(f"toolu_{i}", "note", {"text": "x"})) for i in range(5)]
    with pytest.raises(BudgetExhausted, match="max_tool_calls"):
        run_inline(
            dsn,
            {
                "task": "loop",
                "model": "claude-haiku-4-5",
                "tools": ["note"],
                "max_tool_calls": 1,
                "est_usd": 0,
            },
            provider=prov.ScriptedProvider(script),
        )


def _turns(n_final: int, tools: dict[int, tuple[str, dict[str, Any]]]) -> Any:
    """A reply function: the k-th assistant turn (by the conversation) calls tools[k], turn n_final ends."""

    def reply(body: dict[str, Any], n: int) -> tuple[int, dict[str, Any]]:
        k = sum(1 for m in body["messages"] if m["role"] == "assistant") + 1
        if k >= n_final:
            return 200, message([{"type": "text", "text": f"final after {k - 1} turns"}])
        name, args = tools.get(k, ("note", {"text": f"turn {k}"}))
        return 200, message(tool_use(f"toolu_turn{k}", name, args))

    return reply


@pytest.mark.slow
def test_kill9_during_iteration_3_of_6_resumes_without_repeating(
    dsn: str, fake_anthropic: Any, workers: Any
) -> None:
    """kill -9 in iteration 3's tool: the next attempt makes exactly the 3 remaining model calls."""
    server = fake_anthropic(_turns(6, {3: ("crash", {"at_iteration": 3})}))
    env = {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": server.url}
    with psycopg.connect(dsn, autocommit=True) as conn:
        db.create_workspace(conn, "w")
        sub = db.submit_run(
            conn,
            "w",
            "agent",
            {
                "task": "six turns",
                "model": "claude-sonnet-4-6",
                "provider": "anthropic",
                "tools": ["note", "crash"],
            },
        )
        w1 = workers(dsn, "--lease", "2", recipes="agent_recipes", env=env)
        wait_for(lambda: w1.proc.poll() is not None, 30, "the worker to kill itself in iteration 3")
        assert len(server.requests) == 3
        w2 = workers(dsn, "--lease", "2", recipes="agent_recipes", env=env)
        wait_for(
            lambda: (
                one(conn, "select status from pgflight.step_status where step_id = %s", sub.step_id)
                == "succeeded"
            ),
            40,
            f"the resumed agent to finish\n{w2.output()[-2000:]}",
        )
        assert len(server.requests) == 6
        # the resumed requests carried iterations 1-3 exactly as first sent
        assert (
            server.requests[3]["messages"][: len(server.requests[2]["messages"])]
            == server.requests[2]["messages"]
        )
        ids = [
            b["id"]
            for m in server.requests[5]["messages"]
            if m["role"] == "assistant"
            for b in m["content"]
            if b["type"] == "tool_use"
        ]
        assert ids == ["toolu_turn1", "toolu_turn2", "toolu_turn3", "toolu_turn4", "toolu_turn5"]
        agent = db.agent.agent_run_of(conn, sub.step_id)
        assert agent is not None and agent.iterations == 6
        assert (
            one(conn, "select count(*) from pgflight.costs where agent_run_id = %s", agent.agent_run_id) == 6
        )
        assert (
            one(
                conn,
                "select count(distinct attempt_id) from pgflight.costs where agent_run_id = %s",
                agent.agent_run_id,
            )
            == 2
        )
        res = one(
            conn,
            "select content->>'content' from pgflight.traces where agent_run_id = %s"
            " and tool_use_id = 'toolu_turn3' and block_type = 'tool_result'",
            agent.agent_run_id,
        )
        assert res == "survived"  # a tool without side effects runs again after the crash


@pytest.mark.slow
def test_interrupted_tool_with_receipt_is_not_executed_again(
    dsn: str, fake_anthropic: Any, workers: Any
) -> None:
    """The worker dies after the effect's receipt but before the tool result: the retry uses the receipt."""
    bank = ChargeCounter()
    server = fake_anthropic(_turns(2, {1: ("charge_then_die", {"url": bank.url})}))
    env = {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": server.url}
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            db.create_workspace(conn, "w")
            sub = db.submit_run(
                conn,
                "w",
                "agent",
                {
                    "task": "charge",
                    "model": "claude-haiku-4-5",
                    "provider": "anthropic",
                    "tools": ["charge_then_die"],
                },
            )
            w1 = workers(dsn, "--lease", "2", recipes="agent_recipes", env=env)
            wait_for(lambda: w1.proc.poll() is not None, 30, "the worker to die after the charge")
            assert bank.calls == 1
            workers(dsn, "--lease", "2", recipes="agent_recipes", env=env)
            wait_for(
                lambda: (
                    one(conn, "select status from pgflight.step_status where step_id = %s", sub.step_id)
                    == "succeeded"
                ),
                40,
                "the resumed agent to finish",
            )
            assert bank.calls == 1
            agent = db.agent.agent_run_of(conn, sub.step_id)
            assert agent is not None
            row = conn.execute(
                "select status, content->>'content' from pgflight.traces where agent_run_id = %s"
                " and block_type = 'tool_result'",
                [agent.agent_run_id],
            ).fetchone()
            assert row is not None and row[0] == "completed" and json.loads(row[1]) == {"charge_no": 1}
            assert len(server.requests) == 2
    finally:
        bank.close()


def test_interrupted_side_effect_without_receipt_is_reported_to_the_model(dsn: str) -> None:
    """A side-effecting call left in flight with no receipt and no verify hook is not retried blindly."""
    script = [
        message(tool_use("toolu_x", "charge_then_die", {"url": "http://127.0.0.1:9/none"})),
        message([{"type": "text", "text": "ok"}]),
    ]
    with psycopg.connect(dsn, autocommit=True) as conn:
        db.create_workspace(conn, "w")
        sub = db.submit_run(
            conn,
            "w",
            "agent",
            {"task": "t", "model": "offline", "tools": ["charge_then_die"]},
            options={"backoff": {"base_s": 0}},
        )
        wid = db.register_worker(conn, "inline")
        (claim,) = db.claim_batch(conn, wid, batch_size=1, lease_s=60, recipes=["agent"])
        db.start_step(conn, claim.attempt_id, claim.fencing_token)
        call = lambda fn, *a, **k: fn(conn, *a, **k)  # noqa: E731
        # attempt 1 records the call and marks the tool in flight, then "crashes"
        begun = db.agent.begin_agent_run(
            conn, claim.attempt_id, claim.fencing_token, model="offline", task="t"
        )
        db.agent.record_model_call(
            conn,
            claim.attempt_id,
            claim.fencing_token,
            begun.agent_run_id,
            1,
            script[0]["content"],
            script[0]["usage"],
            "offline",
        )
        db.agent.mark_tool_call(conn, claim.attempt_id, claim.fencing_token, begun.agent_run_id, "toolu_x")
        conn.execute(
            "update pgflight.step_attempts set lease_expires_at = now() - interval '1 s' where id = %s",
            [claim.attempt_id],
        )
        db.reclaim_expired(conn)
        (claim2,) = db.claim_batch(conn, wid, batch_size=1, lease_s=60, recipes=["agent"])
        db.start_step(conn, claim2.attempt_id, claim2.fencing_token)
        ctx = StepContext(claim2, AgentInput.model_validate(claim2.input), call=call)
        provider = prov.ScriptedProvider(script[1:])
        result = AgentLoop(ctx, ctx.input, provider=provider).run()
        assert result["answer"] == "ok"
        sent = provider.requests[0].messages[2]["content"][0]
        assert sent["is_error"] is True and "interrupted" in sent["content"]
        assert sub.step_id == claim2.step_id


def test_cli_trace_and_export_dataset(dsn: str, tmp_path: Path) -> None:
    """
    `pgflight trace STEP` prints the transcript with costs; export-dataset writes the conversation
    as JSONL.
    """
    import subprocess
    import sys

    _, step_id = run_inline(dsn, {"task": "say hi", "tools": ["note"]})
    env = dict(__import__("os").environ, PGFLIGHT_DSN=dsn)
    tr = subprocess.run(
        [sys.executable, "-m", "pgflight.cli", "trace", str(step_id)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert tr.returncode == 0, tr.stderr
    assert "iteration 2" in tr.stdout and "note(" in tr.stdout and "$0.00," in tr.stdout
    out = tmp_path / "d.jsonl"
    ex = subprocess.run(
        [sys.executable, "-m", "pgflight.cli", "export-dataset", "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ex.returncode == 0, ex.stderr
    (line,) = out.read_text().splitlines()
    conv = json.loads(line)
    assert conv["usd"] == "0.000000"  # money in JSON: a decimal string with a fixed scale
    assert [m["role"] for m in conv["messages"]] == ["user", "assistant", "user", "assistant"]
    assert conv["messages"][2]["content"][0]["type"] == "tool_result" and conv["tools_used"] == ["note"]
    bad = subprocess.run(
        [sys.executable, "-m", "pgflight.cli", "trace", "999999"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 4 and "step 999999 is unknown" in bad.stderr  # 4: not found
