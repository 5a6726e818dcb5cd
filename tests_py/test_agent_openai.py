"""
The second provider: OpenAI's Chat Completions API with tools, through the real `openai` SDK and
real worker processes against a local server that speaks that API. The conversation is translated
both ways (tool calls and tool messages by id), each call is priced from model_prices (cached
prompt tokens at the cached-input rate), and the engine's guarantees hold as for Anthropic: a
kill -9 during a tool resumes without asking a recorded iteration again, and a USD cap stops the
agent before a call that cannot fit.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import psycopg
import pytest

import agent_recipes  # noqa: F401  (tools note, crash)
from agent_support import FakeAnthropic, fake_anthropic  # noqa: F401  (any JSON-over-POST API)
from pgflight import db
from pgflight.agent.providers import Request, from_chat_completion, to_chat_completions
from worker_support import one, wait_for, workers  # noqa: F401

MODEL = "gpt-4.1-mini"  # USD 0.40 input, 0.10 cached input, 1.60 output per million tokens


def completion(
    *,
    text: str | None = None,
    calls: list[tuple[str, str, str]] = (),
    prompt: int = 1000,  # type: ignore[assignment]
    cached: int = 0,
    out: int = 100,
) -> dict[str, Any]:
    """A Chat Completions response body; calls: (id, function name, arguments as JSON text)."""
    msg: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
    if calls:
        msg["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls
        ]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1765000000,
        "model": MODEL,
        "choices": [
            {"index": 0, "message": msg, "finish_reason": "tool_calls" if calls else "stop", "logprobs": None}
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": out,
            "total_tokens": prompt + out,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def _turns(crash_at: int | None = None, prompt: int = 1000) -> Any:
    """Turn k (by the tool messages so far) calls note (or crash at `crash_at`); turn 3 answers."""

    def reply(body: dict[str, Any], n: int) -> tuple[int, dict[str, Any]]:
        k = 1 + sum(1 for m in body["messages"] if m["role"] == "assistant")
        if k >= 3:
            return 200, completion(text=f"final after {k - 1} turns", prompt=prompt, cached=200)
        if k == crash_at:
            return 200, completion(calls=[(f"call_{k}", "crash", f'{{"at_iteration": {k}}}')], prompt=prompt)
        return 200, completion(
            calls=[(f"call_{k}", "note", f'{{"text": "n{k}"}}')], prompt=prompt, cached=200
        )

    return reply


def _submit(conn: psycopg.Connection[Any], tools: list[str], **extra: Any) -> int:
    db.create_workspace(conn, "w")
    inp = {"task": "take notes", "system": "be brief", "model": MODEL, "provider": "openai", "tools": tools}
    return db.submit_run(conn, "w", "agent", {**inp, **extra}, options={"max_attempts": 3}).step_id


def _env(server: FakeAnthropic) -> dict[str, str]:
    return {
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": server.url + "/v1",
        "PGFLIGHT_AGENT_BACKOFF_S": "0.01",
    }


def _status(conn: psycopg.Connection[Any], step_id: int) -> str:
    return str(one(conn, "select status from pgflight.step_status where step_id = %s", step_id))


def test_the_translation_keeps_tool_calls_and_results_paired_by_id() -> None:
    req = Request(
        MODEL,
        "sys",
        [
            {"role": "user", "content": [{"type": "text", "text": "task"}]},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "c1", "name": "note", "input": {"text": "x"}}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "X"}]},
        ],
        [{"name": "note", "description": "d", "input_schema": {"type": "object"}}],
        50,
    )
    kw = to_chat_completions(req)
    assert [m["role"] for m in kw["messages"]] == ["system", "user", "assistant", "tool"]
    assert kw["messages"][2]["tool_calls"][0]["function"] == {"name": "note", "arguments": '{"text": "x"}'}
    assert kw["messages"][3] == {"role": "tool", "tool_call_id": "c1", "content": "X"}
    assert kw["tools"][0]["function"]["parameters"] == {"type": "object"}
    back = from_chat_completion(completion(calls=[("c2", "note", "not json")], prompt=500, cached=100))
    assert back["content"] == [
        {"type": "tool_use", "id": "c2", "name": "note", "input": {"_arguments": "not json"}}
    ]
    assert back["stop_reason"] == "tool_use"
    assert back["usage"]["input_tokens"] == 400 and back["usage"]["cache_read_input_tokens"] == 100


@pytest.mark.slow
def test_an_openai_agent_runs_to_its_answer_priced_from_model_prices(
    dsn: str, fake_anthropic: Any, workers: Any
) -> None:
    server = fake_anthropic(_turns())
    with psycopg.connect(dsn, autocommit=True) as conn:
        step_id = _submit(conn, ["note"])
        w = workers(dsn, "--lease", "5", recipes="agent_recipes", env=_env(server))
        wait_for(
            lambda: _status(conn, step_id) in ("succeeded", "dead_letter"),
            40,
            f"the agent\n{w.output()[-2000:]}",
        )
        assert _status(conn, step_id) == "succeeded"
        res = one(
            conn,
            "select result from pgflight.step_attempts where step_id = %s and status = 'succeeded'",
            step_id,
        )
        assert res["answer"] == "final after 2 turns"
        assert len(server.requests) == 3
        second = server.requests[1]
        assert second["model"] == MODEL and second["messages"][0] == {"role": "system", "content": "be brief"}
        assert second["messages"][2]["tool_calls"][0]["id"] == "call_1"
        assert second["messages"][3] == {"role": "tool", "tool_call_id": "call_1", "content": "N1"}
        assert second["tools"][0]["type"] == "function" and second["tools"][0]["function"]["name"] == "note"
        agent = db.agent.agent_run_of(conn, step_id)
        assert agent is not None
        usd = [
            Decimal(r[0])
            for r in conn.execute(
                "select usd from pgflight.costs where agent_run_id = %s order by iteration",
                [agent.agent_run_id],
            ).fetchall()
        ]
        # 800 input at 0.40, 200 cached at 0.10, 100 output at 1.60 (USD per million tokens)
        assert usd == [Decimal("0.0005")] * 3
        assert agent.usd == sum(usd)


@pytest.mark.slow
def test_kill9_in_an_openai_agents_tool_resumes_without_asking_a_recorded_iteration_again(
    dsn: str, fake_anthropic: Any, workers: Any
) -> None:
    server = fake_anthropic(_turns(crash_at=2))
    with psycopg.connect(dsn, autocommit=True) as conn:
        step_id = _submit(conn, ["note", "crash"])
        w1 = workers(dsn, "--lease", "2", recipes="agent_recipes", env=_env(server))
        wait_for(lambda: w1.proc.poll() is not None, 30, "the worker to kill itself in iteration 2")
        assert len(server.requests) == 2
        w2 = workers(dsn, "--lease", "2", recipes="agent_recipes", env=_env(server))
        wait_for(
            lambda: _status(conn, step_id) == "succeeded", 40, f"the resumed agent\n{w2.output()[-2000:]}"
        )
        assert len(server.requests) == 3  # iterations 1 and 2 were not asked again
        # iteration 3 was sent iterations 1-2 as first sent (system, task, call 1, its result, ...)
        assert server.requests[2]["messages"][:4] == server.requests[1]["messages"]
        assert server.requests[2]["messages"][4]["tool_calls"][0]["id"] == "call_2"
        agent = db.agent.agent_run_of(conn, step_id)
        assert agent is not None and agent.iterations == 3
        rows = conn.execute(
            "select count(*), sum(usd) from pgflight.costs where agent_run_id = %s and not lease_lost",
            [agent.agent_run_id],
        ).fetchone()
        assert rows is not None and rows[0] == 3 and Decimal(rows[1]) == agent.usd


@pytest.mark.slow
def test_an_openai_agents_usd_cap_stops_it_before_a_call_that_cannot_fit(
    dsn: str, fake_anthropic: Any, workers: Any
) -> None:
    # the first answer costs 122,000 x 0.40 + 100 x 1.60 per million = USD 0.04896; the next call's
    # reservation (its request's size at the input price + max_tokens 1024 at the output price,
    # about USD 0.0017) cannot fit under 0.05, so it is refused before it is made
    server = fake_anthropic(_turns(prompt=122_000))
    with psycopg.connect(dsn, autocommit=True) as conn:
        step_id = _submit(conn, ["note"], max_usd=0.05)
        w = workers(dsn, "--lease", "5", recipes="agent_recipes", env=_env(server))
        wait_for(
            lambda: _status(conn, step_id) in ("succeeded", "dead_letter"),
            40,
            f"the agent\n{w.output()[-2000:]}",
        )
        assert _status(conn, step_id) == "dead_letter"
        assert len(server.requests) == 1
        agent = db.agent.agent_run_of(conn, step_id)
        assert agent is not None and agent.usd <= Decimal("0.05")
        spent = one(
            conn,
            "select b.spent_usd from pgflight.budgets b where b.scope = 'step' and b.step_id = %s",
            step_id,
        )
        assert Decimal(spent) == agent.usd
        error = one(
            conn,
            "select error from pgflight.step_attempts where step_id = %s and status = 'dead_letter'",
            step_id,
        )
        assert "budget_exhausted" in str(error)
