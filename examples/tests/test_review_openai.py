"""
``pgflight review --model openai`` end to end against a local fake Chat Completions API (tests_py's
agent_support server): the real command, real worker processes, the real ``openai`` SDK over HTTP.
The fake server reads each Chat Completions request back into the Messages shape the offline review
policy answers (so its turns are deterministic), and answers with that turn as a Chat Completions
response: tool calls paired by id, usage with cached prompt tokens. The report is the same review
as with the other providers, and every model call is in the cost ledger at the OpenAI price.
"""

from __future__ import annotations

import json
import os
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest
from test_review_anthropic import review_argv

from agent_support import fake_anthropic  # noqa: F401  (any JSON-over-POST API)
from pgflight.db.audit import run_audit
from pgflight_review.policy import review_policy

DATA = Path(__file__).parent / "eval" / "texts"
MODEL = "gpt-4.1-mini"  # model_prices: USD 0.40 input, 0.10 cached input, 1.60 output per million


def as_messages(body: dict[str, Any]) -> dict[str, Any]:
    """A Chat Completions request as the Messages request the review policy reads."""
    messages: list[dict[str, Any]] = []
    for m in body["messages"]:
        if m["role"] == "user":
            messages.append({"role": "user", "content": m["content"]})
        elif m["role"] == "assistant":
            blocks: list[dict[str, Any]] = (
                [{"type": "text", "text": m["content"]}] if m.get("content") else []
            )
            for c in m.get("tool_calls") or []:
                args = json.loads(c["function"]["arguments"])
                blocks.append(
                    {"type": "tool_use", "id": c["id"], "name": c["function"]["name"], "input": args}
                )
            messages.append({"role": "assistant", "content": blocks})
        elif m["role"] == "tool":
            result = {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}
            if messages and messages[-1]["role"] == "user" and isinstance(messages[-1]["content"], list):
                messages[-1]["content"].append(result)
            else:
                messages.append({"role": "user", "content": [result]})
    tools = [{"name": t["function"]["name"]} for t in body.get("tools") or []]
    return {"messages": messages, "tools": tools}


def as_completion(blocks: list[dict[str, Any]], stop: str, model: str) -> dict[str, Any]:
    """The policy's turn as a Chat Completions response."""
    text = "".join(b["text"] for b in blocks if b["type"] == "text") or None
    calls = [
        {
            "id": b["id"],
            "type": "function",
            "function": {"name": b["name"], "arguments": json.dumps(b["input"])},
        }
        for b in blocks
        if b["type"] == "tool_use"
    ]
    msg: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
    if calls:
        msg["tool_calls"] = calls
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1765000000,
        "model": model,
        "choices": [
            {"index": 0, "message": msg, "finish_reason": "tool_calls" if calls else "stop", "logprobs": None}
        ],
        "usage": {
            "prompt_tokens": 2000,
            "completion_tokens": 300,
            "total_tokens": 2300,
            "prompt_tokens_details": {"cached_tokens": 1000},
        },
    }


@pytest.mark.slow
def test_review_with_the_openai_model_against_a_local_chat_completions_server(
    dsn: str, tmp_path: Path, fake_anthropic: Any
) -> None:
    library = tmp_path / "library"
    library.mkdir()
    (library / "custom-acme-eula.txt").write_bytes((DATA / "custom-acme-eula.txt").read_bytes())

    def reply(body: dict[str, Any], n: int) -> tuple[int, dict[str, Any]]:
        assert body["model"] == MODEL
        blocks, stop = review_policy(as_messages(body))
        return 200, as_completion(blocks, stop, body["model"])

    server = fake_anthropic(reply)
    out = tmp_path / "out"
    env = dict(
        os.environ,
        PGFLIGHT_DSN=dsn,
        OPENAI_API_KEY="test-key",
        OPENAI_BASE_URL=server.url + "/v1",
        COLUMNS="160",
    )
    env.pop("ANTHROPIC_API_KEY", None)
    proc = subprocess.run(
        review_argv(library, f"openai:{MODEL}", out),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr

    with psycopg.connect(dsn, autocommit=True) as conn:
        run_id = conn.execute(
            "select id from pgflight.runs where recipe = 'review_library' order by id desc limit 1"
        ).fetchone()[0]
        audit = run_audit(conn, run_id)
        costs = conn.execute(
            "select model, input_tokens, cache_read_tokens, output_tokens, usd from pgflight.costs"
            " where run_id = %s",
            [run_id],
        ).fetchall()
    assert audit.status == "succeeded" and audit.dead_letters == 0
    assert len(server.requests) == audit.model_calls == len(costs) >= 3
    # every call priced at gpt-4.1-mini's rates: 1,000 uncached + 1,000 cached input, 300 output
    per_call = (1000 * Decimal("0.40") + 1000 * Decimal("0.10") + 300 * Decimal("1.60")) / 1_000_000
    assert {c[0] for c in costs} == {MODEL}
    assert all(Decimal(c[4]) == per_call for c in costs), costs

    md = (out / "report.md").read_text(encoding="utf-8")
    assert f"model openai:{MODEL}" in md
    for title in ("Indemnification", "Automatic termination", "Arbitration or class-action waiver"):
        assert title in md, title
