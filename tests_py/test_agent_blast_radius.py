"""
Blast radius, agent side: one bad model answer harms only its own step, and is never paid twice.
The real `anthropic` SDK against the local Messages API server (agent_support.FakeAnthropic),
real PostgreSQL, real worker processes where a crash is part of the case.

- an empty end_turn recorded just before a SIGKILL is not asked again on resume, nor on
  replay_from; the loop is iterative and a hard cap on requests per attempt stops a loop the
  recorder cannot see; a paid answer refused for a lost lease is kept on the record;
- Retry-After as an HTTP-date and `Retry-After: 86400` (capped); a rate limit never spends
  a step attempt (waited out within the attempt, then the step is given back).
"""

from __future__ import annotations

import time
from typing import Any

import psycopg
import pytest

import agent_recipes  # noqa: F401  (tools note, crash; the kill-after-record hook)
from agent_support import (  # noqa: F401  (fake_anthropic is a fixture)
    FakeAnthropic,
    empty_end_turn,
    error_body,
    fake_anthropic,
    http_date,
    message,
    tool_use,
)
from pgflight import db, errors
from pgflight.agent import providers as prov
from pgflight.agent.loop import AgentInput, AgentLoop
from pgflight.models_agent import ModelCallRecorded
from pgflight.recipes import Fatal, StepContext
from worker_support import one, wait_for, workers  # noqa: F401

AGENT = {"task": "note hi", "model": "claude-sonnet-4-6", "provider": "anthropic", "tools": ["note"]}


def _status(conn: psycopg.Connection[Any], step_id: int) -> str:
    return str(one(conn, "select status from pgflight.step_status where step_id = %s", step_id))


def _agent(conn: psycopg.Connection[Any], step_id: int) -> Any:
    agent = db.agent.agent_run_of(conn, step_id)
    assert agent is not None
    return agent


def _costs(conn: psycopg.Connection[Any], agent_run_id: int) -> int:
    return int(one(conn, "select count(*) from pgflight.costs where agent_run_id = %s", agent_run_id))


def _tool_then_empty(body: dict[str, Any], n: int) -> tuple[int, dict[str, Any]]:
    """Turn 1 calls the note tool; the model answers its result with an empty end_turn."""
    if not any(m["role"] == "assistant" for m in body["messages"]):
        return 200, message(tool_use("toolu_1", "note", {"text": "hi"}))
    return 200, empty_end_turn()


@pytest.mark.slow
def test_empty_end_turn_recorded_then_sigkill_is_not_asked_again(
    dsn: str, fake_anthropic: Any, workers: Any
) -> None:
    """
    The worker dies right after the empty end_turn is recorded; on resume, and on replay_from of
    the finished run, no request reaches the API server (before: ~1,900 and ~960, RecursionError).
    """
    server: FakeAnthropic = fake_anthropic(_tool_then_empty)
    env = {
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": server.url,
        "AGENT_TEST_KILL_AFTER_EMPTY_RECORD": "1",
    }
    with psycopg.connect(dsn, autocommit=True) as conn:
        db.create_workspace(conn, "w")
        sub = db.submit_run(conn, "w", "agent", AGENT)
        w1 = workers(dsn, "--lease", "2", recipes="agent_recipes", env=env)
        wait_for(lambda: w1.proc.poll() is not None, 30, f"the kill after the record\n{w1.output()[-2000:]}")
        assert len(server.requests) == 2
        agent = _agent(conn, sub.step_id)
        assert agent.iterations == 2 and _costs(conn, agent.agent_run_id) == 2
        w2 = workers(dsn, "--lease", "2", recipes="agent_recipes", env=env)
        wait_for(
            lambda: _status(conn, sub.step_id) == "succeeded", 30, f"the resumed step\n{w2.output()[-2000:]}"
        )
        assert len(server.requests) == 2  # the recorded empty iteration was not asked again
        result = one(conn, "select result from pgflight.step_status where step_id = %s", sub.step_id)
        assert result["answer"] == "" and result["iterations"] == 2
        assert _costs(conn, agent.agent_run_id) == 2

        db.replay_from(conn, sub.step_id)
        wait_for(
            lambda: (
                one(
                    conn,
                    "select count(*) from pgflight.step_attempts where step_id = %s and status = 'succeeded'",
                    sub.step_id,
                )
                == 2
            ),
            30,
            f"the replayed step\n{w2.output()[-2000:]}",
        )
        assert len(server.requests) == 2  # a replay of the finished agent asks the model nothing
        assert _costs(conn, agent.agent_run_id) == 2
        assert "RecursionError" not in w2.output()


def _claim(conn: psycopg.Connection[Any], inp: dict[str, Any]) -> Any:
    db.create_workspace(conn, "w")
    db.submit_run(conn, "w", "agent", inp)
    wid = db.register_worker(conn, "inline")
    (claim,) = db.claim_batch(conn, wid, batch_size=1, lease_s=60, recipes=["agent"], start=True)
    return claim


def test_hard_cap_on_requests_stops_a_loop_the_recorder_cannot_see(
    dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recorder that keeps answering 'already recorded' (and records nothing): 5 requests, then Fatal."""
    monkeypatch.setenv("PGFLIGHT_AGENT_MAX_CALLS_PER_ATTEMPT", "5")
    provider = prov.ScriptedProvider([message([{"type": "text", "text": "hi"}]) for _ in range(50)])
    with psycopg.connect(dsn, autocommit=True) as conn:
        claim = _claim(conn, {"task": "t", "model": "claude-haiku-4-5", "est_usd": 0})

        def call(fn: Any, *a: Any, **k: Any) -> Any:
            if fn is db.agent.record_model_call:  # the loop the recorder cannot see
                return ModelCallRecorded(
                    agent_run_id=a[2],
                    iteration=a[3],
                    usd=0,
                    recorded=False,
                    iterations=0,
                    tool_calls=0,
                    total_usd=0,
                )
            return fn(conn, *a, **k)

        inp = AgentInput.model_validate(claim.input)
        with pytest.raises(Fatal, match="model-call cap reached: this attempt made 5 requests"):
            AgentLoop(StepContext(claim, inp, call=call), inp, provider=provider).run()
        assert len(provider.requests) == 5


def test_paid_answer_refused_for_a_lost_lease_is_charged(dsn: str) -> None:
    """
    The lease lapses while the model answers: record_model_call refuses, and the loop charges the
    paid call through record_orphan_cost (costs.lease_lost, the agent's usd), no receipt needed.
    """
    with psycopg.connect(dsn, autocommit=True) as conn:
        claim = _claim(conn, {"task": "t", "model": "claude-haiku-4-5", "est_usd": 0})

        def answer_after_the_lease_lapsed(request: prov.Request) -> dict[str, Any]:
            conn.execute(
                "update pgflight.step_attempts set lease_expires_at = now() - interval '1 s' where id = %s",
                [claim.attempt_id],
            )
            db.reclaim_expired(conn)
            return message([{"type": "text", "text": "paid for"}], input_tokens=1234, output_tokens=56)

        inp = AgentInput.model_validate(claim.input)
        ctx = StepContext(claim, inp, call=lambda fn, *a, **k: fn(conn, *a, **k))
        loop = AgentLoop(ctx, inp, provider=prov.ScriptedProvider([answer_after_the_lease_lapsed]))
        with pytest.raises(errors.LeaseLost):
            loop.run()
        cost = conn.execute(
            "select c.input_tokens, c.output_tokens, c.usd, c.model, c.lease_lost, r.usd"
            "  from pgflight.costs c join pgflight.agent_runs r on r.id = c.agent_run_id"
            " where c.attempt_id = %s and c.iteration = 1",
            [claim.attempt_id],
        ).fetchall()
        assert len(cost) == 1
        input_tokens, output_tokens, usd, model, lease_lost, run_usd = cost[0]
        assert (input_tokens, output_tokens, model, lease_lost) == (1234, 56, "claude-sonnet-4-6", True)
        assert usd > 0 and run_usd == usd  # charged to the agent (and its budgets), uncapped
        assert db.find_effect(conn, claim.step_id, f"model_call:{claim.attempt_id}:1") is None


def test_answer_the_recorder_refuses_ends_the_step_without_asking_again(dsn: str) -> None:
    """A paid answer the flight recorder cannot store (a tool_use block without an id; any block type is
    stored): usage kept, Fatal, one request."""
    no_id = {"type": "tool_use", "name": "note", "input": {"text": "x"}}
    provider = prov.ScriptedProvider([message([no_id], input_tokens=777) for _ in range(3)])
    with psycopg.connect(dsn, autocommit=True) as conn:
        claim = _claim(conn, {"task": "t", "model": "claude-haiku-4-5", "est_usd": 0})
        inp = AgentInput.model_validate(claim.input)
        ctx = StepContext(claim, inp, call=lambda fn, *a, **k: fn(conn, *a, **k))
        with pytest.raises(Fatal, match="the recorder refused the answer of model call 1"):
            AgentLoop(ctx, inp, provider=provider).run()
        assert len(provider.requests) == 1
        receipt = db.find_effect(conn, claim.step_id, f"model_call:{claim.attempt_id}:1")
        assert receipt is not None and receipt.result["usage"]["input_tokens"] == 777
        assert receipt.result["why"].startswith("refused: CheckViolation")


def _inline(dsn: str, server: FakeAnthropic) -> tuple[dict[str, Any], int, float]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        claim = _claim(conn, AGENT)
        inp = AgentInput.model_validate(claim.input)
        ctx = StepContext(claim, inp, call=lambda fn, *a, **k: fn(conn, *a, **k))
        started = time.monotonic()
        result = AgentLoop(ctx, inp, provider=prov.AnthropicProvider(base_url=server.url, api_key="k")).run()
        return result, claim.step_id, time.monotonic() - started


def _rate_limit_rows(dsn: str, agent_run_id: int) -> list[dict[str, Any]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return [
            r[0]
            for r in conn.execute(
                "select content from pgflight.traces where agent_run_id = %s and block_type = 'api_error'"
                " order by iteration, seq",
                [agent_run_id],
            ).fetchall()
        ]


def _done(body: dict[str, Any], n: int) -> tuple[int, dict[str, Any]]:
    return 200, message([{"type": "text", "text": "done"}])


def test_retry_after_as_an_http_date_is_obeyed(dsn: str, fake_anthropic: Any) -> None:
    """429 with `Retry-After: <HTTP-date 2 s ahead>` (before: ValueError, dead letter after two requests)."""
    server: FakeAnthropic = fake_anthropic(
        lambda body, n: (429, error_body(429), {"retry-after": http_date(2)}) if n == 1 else _done(body, n)
    )
    result, _, elapsed = _inline(dsn, server)
    assert result["answer"] == "done" and len(server.requests) == 2
    (row,) = _rate_limit_rows(dsn, result["agent_run_id"])
    assert row["rate_limited"] is True and row["status"] == 429
    assert 0.5 <= row["wait_s"] <= 2.0 and row["retry_after"].endswith(" GMT")
    assert elapsed >= row["wait_s"] - 0.05


def test_retry_after_86400_is_capped(dsn: str, fake_anthropic: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """`Retry-After: 86400` waits PGFLIGHT_AGENT_MAX_RETRY_AFTER_S (here 1 s), not a day."""
    monkeypatch.setenv("PGFLIGHT_AGENT_MAX_RETRY_AFTER_S", "1")
    server: FakeAnthropic = fake_anthropic(
        lambda body, n: (529, error_body(529), {"retry-after": "86400"}) if n == 1 else _done(body, n)
    )
    result, _, elapsed = _inline(dsn, server)
    assert result["answer"] == "done" and len(server.requests) == 2
    (row,) = _rate_limit_rows(dsn, result["agent_run_id"])
    assert row == {**row, "rate_limited": True, "wait_s": 1.0, "retry_after": "86400", "status": 529}
    assert 1.0 <= elapsed < 10


def test_default_cap_is_60_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the setting one wait lasts at most 60 s; an HTTP-date in the past waits nothing."""
    monkeypatch.delenv("PGFLIGHT_AGENT_MAX_RETRY_AFTER_S", raising=False)
    slept: list[float] = []
    provider = prov.ScriptedProvider(
        [
            prov.TransientError("429", status=429, retry_after_s=86400.0),
            message([{"type": "text", "text": "x"}]),
        ]
    )
    prov.create_with_retries(provider, prov.Request("m", "", [], []), sleep=slept.append)
    assert slept == [60.0]
    assert prov.parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert prov.parse_retry_after("86400") == 86400.0 and prov.parse_retry_after("soon") is None


@pytest.mark.slow
def test_rate_limits_never_spend_an_attempt(dsn: str, fake_anthropic: Any, workers: Any) -> None:
    """
    Three 429s (Retry-After: 1) with a patience of 1 s: the attempt waits once, gives the step back
    (release_step, no attempt spent), and the step succeeds on its first and only attempt.
    """
    server: FakeAnthropic = fake_anthropic(
        lambda body, n: (429, error_body(429), {"retry-after": "1"}) if n <= 3 else _done(body, n)
    )
    env = {
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": server.url,
        "PGFLIGHT_AGENT_RATE_LIMIT_PATIENCE_S": "1",
    }
    with psycopg.connect(dsn, autocommit=True) as conn:
        db.create_workspace(conn, "w")
        sub = db.submit_run(conn, "w", "agent", AGENT, options={"max_attempts": 1})
        w = workers(dsn, "--lease", "3", "--poll", "0.3", recipes="agent_recipes", env=env)
        wait_for(lambda: _status(conn, sub.step_id) == "succeeded", 30, f"the step\n{w.output()[-3000:]}")
        assert len(server.requests) == 4
        rows = conn.execute(
            "select attempt_no, status from pgflight.step_attempts where step_id = %s", [sub.step_id]
        ).fetchall()
        assert rows == [(1, "succeeded")]
        released = one(
            conn,
            "select count(*) from pgflight.run_events where step_id = %s and reason = 'released'"
            " and detail->>'note' like 'rate-limited by the model API%%'",
            sub.step_id,
        )
        assert released == 1
        traced = _rate_limit_rows(dsn, _agent(conn, sub.step_id).agent_run_id)
        assert [(r["status"], r["rate_limited"], r["wait_s"]) for r in traced] == [
            (429, True, 1.0),
            (429, True, None),  # the wait that would pass the patience: given back instead
            (429, True, 1.0),
        ]
