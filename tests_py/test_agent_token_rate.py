"""
Model tokens per minute per workspace (``model_tokens_per_min``), end to end: real
worker processes run agents against the local Messages API server; the engine refuses an admission
past the workspace's rolling minute (ZF013 with retry_after_s) and the loop waits it out,
heartbeating, without spending an attempt. The SQL refusal itself (DETAIL, retry_after_s, the
window's arithmetic with the fake clock) is pgTAP: tests_sql/reserve_budget/.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
import pytest

import agent_recipes  # noqa: F401  (the note tool)
from agent_support import FakeAnthropic, fake_anthropic, message, tool_use  # noqa: F401
from pgflight import db
from pgflight.agent import providers as prov
from pgflight.agent.loop import AgentInput, AgentLoop
from pgflight.recipes import Release, StepContext
from worker_support import one, wait_for, workers  # noqa: F401

AGENT = {"task": "note hi", "model": "claude-sonnet-4-6", "provider": "anthropic", "tools": ["note"]}
TOKENS_PER_CALL = 1200  # message(): 1000 input + 200 output
LIMIT = 6000  # five calls a minute


def _reply(body: dict[str, Any], n: int) -> tuple[int, dict[str, Any]]:
    """Two tool turns, then the answer: three calls of 1,200 tokens per agent."""
    turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if turn < 2:
        return 200, message(tool_use(f"toolu_{n}", "note", {"text": f"t{turn}"}))
    return 200, message([{"type": "text", "text": "done"}])


def _status(conn: psycopg.Connection[Any], step_id: int) -> str:
    return str(one(conn, "select status from pgflight.step_status where step_id = %s", step_id))


@pytest.mark.slow
def test_two_agents_of_a_workspace_stay_within_its_tokens_per_minute(
    dsn: str, fake_anthropic: Any, workers: Any
) -> None:
    """
    Two agents of workspace `tight` (limit 6,000 tokens a minute, 7,200 wanted) and one of `free`:
    over the whole run no 60-second window of `tight`'s model calls (costs.at) holds more than the
    limit, so one call waits out a ZF013 (traced, no attempt spent) and both still succeed on their
    first attempt; `free` is never refused. Takes about 70 s (the window is a real minute).
    """
    server: FakeAnthropic = fake_anthropic(_reply)
    env = {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": server.url}
    with psycopg.connect(dsn, autocommit=True) as conn:
        db.create_workspace(conn, "tight")
        db.create_workspace(conn, "free")
        conn.execute(
            "select pgflight.set_workspace_limits('tight', %s)", [f'{{"model_tokens_per_min": {LIMIT}}}']
        )
        tight = [db.submit_run(conn, "tight", "agent", AGENT, options={"max_attempts": 1}) for _ in range(2)]
        free = db.submit_run(conn, "free", "agent", AGENT, options={"max_attempts": 1})
        w = workers(
            dsn, "--lease", "5", "--poll", "0.3", "--concurrency", "4", recipes="agent_recipes", env=env
        )
        wait_for(
            lambda: _status(conn, free.step_id) == "succeeded", 30, f"the free agent\n{w.output()[-3000:]}"
        )
        wait_for(
            lambda: all(_status(conn, s.step_id) == "succeeded" for s in tight),
            150,
            f"the tight agents\n{w.output()[-3000:]}",
        )
        calls = conn.execute(
            "select c.at, c.input_tokens + c.output_tokens from pgflight.costs c"
            " join pgflight.workspaces ws on ws.id = c.workspace_id where ws.name = 'tight' order by c.at"
        ).fetchall()
        assert sum(t for _, t in calls) == 2 * 3 * TOKENS_PER_CALL
        # every window of 60 s that starts at a call: the tokens of the calls recorded in it
        windows = [
            sum(t for at, t in calls if start <= at < start + timedelta(seconds=60)) for start, _ in calls
        ]
        assert max(windows) <= LIMIT, windows
        assert calls[-1][0] - calls[0][0] >= timedelta(seconds=55)  # the last call waited for the window
        waits = conn.execute(
            "select ws.name, t.content from pgflight.traces t"
            " join pgflight.agent_runs r on r.id = t.agent_run_id"
            " join pgflight.workspaces ws on ws.id = r.workspace_id"
            " where t.block_type = 'api_error' and t.content->>'source' = 'model_tokens_per_min'"
        ).fetchall()
        assert waits and {name for name, _ in waits} == {"tight"}
        for _, block in waits:
            assert block["rate_limited"] is True and 1 <= block["wait_s"] <= 65
            assert "cap=model_tokens_per_min" in block["detail"] and f"limit={LIMIT}" in block["detail"]
        attempts = conn.execute(
            "select a.attempt_no, a.status from pgflight.step_attempts a where a.step_id = any(%s)",
            [[s.step_id for s in tight]],
        ).fetchall()
        assert sorted(attempts) == [(1, "succeeded"), (1, "succeeded")]


def test_a_wait_past_the_patience_gives_the_step_back(
    dsn: str, fake_anthropic: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """
    Limit 1,000 tokens a minute, the first call uses 1,200: the next admission is refused (ZF013,
    about a minute to wait), which passes a patience of 1 s, so the loop raises Release (the worker
    gives the step back, no attempt spent) after tracing the refusal with no wait; the first call's
    tool result is stored all the same.
    """
    monkeypatch.setenv("PGFLIGHT_AGENT_RATE_LIMIT_PATIENCE_S", "1")
    server: FakeAnthropic = fake_anthropic(_reply)
    with psycopg.connect(dsn, autocommit=True) as conn:
        db.create_workspace(conn, "tight")
        conn.execute("select pgflight.set_workspace_limits('tight', '{\"model_tokens_per_min\": 1000}')")
        db.submit_run(conn, "tight", "agent", AGENT)
        wid = db.register_worker(conn, "inline")
        (claim,) = db.claim_batch(conn, wid, batch_size=1, lease_s=60, recipes=["agent"], start=True)
        inp = AgentInput.model_validate(claim.input)
        ctx = StepContext(claim, inp, call=lambda fn, *a, **k: fn(conn, *a, **k))
        loop = AgentLoop(ctx, inp, provider=prov.AnthropicProvider(base_url=server.url, api_key="k"))
        with pytest.raises(Release, match="model tokens per minute"):
            loop.run()
        assert len(server.requests) == 1
        (block,) = [
            r[0]
            for r in conn.execute(
                "select content from pgflight.traces where agent_run_id = %s and block_type = 'api_error'",
                [loop.agent_run_id],
            ).fetchall()
        ]
        assert block["source"] == "model_tokens_per_min" and block["wait_s"] is None
        assert "used=1200 limit=1000" in block["detail"]
        stored = one(
            conn,
            "select count(*) from pgflight.traces where agent_run_id = %s and block_type = 'tool_result'"
            " and status = 'completed'",
            loop.agent_run_id,
        )
        assert stored == 1
