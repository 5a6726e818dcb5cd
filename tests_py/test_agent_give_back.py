"""
A step given back after a rate limit keeps the server's Retry-After: a real `pgflight worker`
process, the real `anthropic` SDK against a local Messages API server that answers 429 with a
Retry-After longer than the worker's rate-limit patience; the next request comes no sooner than
the server said it may.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg

import agent_recipes  # noqa: F401  (the agent recipe with the test tools)
from agent_support import error_body, fake_anthropic, message  # noqa: F401
from pgflight import db
from worker_support import one, wait_for, workers  # noqa: F401


def test_a_step_given_back_after_a_429_is_not_asked_again_before_its_retry_after(
    dsn: str, fake_anthropic: Any, workers: Any
) -> None:
    answered_at: list[float] = []
    asked_at: list[float] = []

    def reply(body: dict[str, Any], n: int) -> tuple[Any, ...]:
        asked_at.append(time.monotonic())
        if n == 1:
            answered_at.append(time.monotonic())
            return 429, error_body(429), {"retry-after": "2"}
        return 200, message([{"type": "text", "text": "done"}], input_tokens=100, output_tokens=10)

    server = fake_anthropic(reply)
    env = {
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": server.url,
        # a wait of 2 s is past this patience: the step is given back instead of waiting
        "PGFLIGHT_AGENT_RATE_LIMIT_PATIENCE_S": "1",
    }
    with psycopg.connect(dsn, autocommit=True) as conn:
        db.create_workspace(conn, "w")
        sub = db.submit_run(
            conn,
            "w",
            "agent",
            {"task": "answer", "model": "claude-sonnet-4-6", "provider": "anthropic", "tools": ["note"]},
        )
        w = workers(dsn, "--lease", "5", "--poll", "0.1", recipes="agent_recipes", env=env)
        status_of = "select status from pgflight.step_status where step_id = %s"
        wait_for(
            lambda: one(conn, status_of, sub.step_id) in ("succeeded", "dead_letter"),
            30,
            f"the step\n{w.output()[-2000:]}",
        )
        assert one(conn, status_of, sub.step_id) == "succeeded"
        assert len(server.requests) == 2
        gap = asked_at[1] - answered_at[0]
        assert gap >= 2.0, f"asked again {gap:.3f} s after a 429 that said retry-after: 2"
        # given back, not failed: one attempt, released once
        assert one(conn, "select count(*) from pgflight.step_attempts where step_id = %s", sub.step_id) == 1
        assert (
            one(
                conn,
                "select count(*) from pgflight.run_events where step_id = %s and reason = 'released'",
                sub.step_id,
            )
            == 1
        )
