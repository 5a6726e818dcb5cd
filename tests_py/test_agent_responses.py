"""
Every shape a Messages API answer can take reaches the agent as what it is, through real worker
processes and the real `anthropic` SDK against a local server: a 200 that is not a message (or not
JSON) is an api_error asked again within the attempt, never an empty final answer; a request the
API refuses (400) fails the step at once instead of spending every attempt; a turn the API paused
(`pause_turn`) is sent back and continued.
"""

from __future__ import annotations

from typing import Any

import psycopg

import agent_recipes  # noqa: F401  (the agent recipe with the test tools)
from agent_support import FakeAnthropic, error_body, fake_anthropic, message  # noqa: F401
from pgflight import db
from worker_support import one, wait_for, workers  # noqa: F401

FINAL = message([{"type": "text", "text": "all done"}], input_tokens=100, output_tokens=10)


def _run_agent(dsn: str, server: FakeAnthropic, workers: Any, end: tuple[str, ...]) -> tuple[int, str]:
    """Submit one agent step, run a worker until the step is in one of `end`; (step id, status)."""
    env = {
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": server.url,
        "PGFLIGHT_AGENT_BACKOFF_S": "0.01",
    }
    with psycopg.connect(dsn, autocommit=True) as conn:
        db.create_workspace(conn, "w")
        sub = db.submit_run(
            conn,
            "w",
            "agent",
            {"task": "answer", "model": "claude-sonnet-4-6", "provider": "anthropic", "tools": ["note"]},
            options={"max_attempts": 3},
        )
        w = workers(dsn, "--lease", "5", recipes="agent_recipes", env=env)
        status_of = "select status from pgflight.step_status where step_id = %s"
        wait_for(
            lambda: one(conn, status_of, sub.step_id) in end or None, 40, f"the step\n{w.output()[-2000:]}"
        )
        return sub.step_id, one(conn, status_of, sub.step_id)


def _api_errors(dsn: str, step_id: int) -> list[dict[str, Any]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        agent = db.agent.agent_run_of(conn, step_id)
        assert agent is not None
        rows = conn.execute(
            "select content from pgflight.traces"
            " where agent_run_id = %s and block_type = 'api_error' order by seq",
            [agent.agent_run_id],
        ).fetchall()
        return [r[0] for r in rows]


def _result(dsn: str, step_id: int) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        res = conn.execute(
            "select result from pgflight.step_attempts where step_id = %s and status = 'succeeded'", [step_id]
        ).fetchone()
        assert res is not None
        return dict(res[0])


def _attempts(dsn: str, step_id: int) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return int(one(conn, "select count(*) from pgflight.step_attempts where step_id = %s", step_id))


def test_a_200_that_is_not_a_message_is_asked_again_not_recorded_as_an_empty_answer(
    dsn: str, fake_anthropic: Any, workers: Any
) -> None:
    bodies = [{"hello": "world"}, b'{"type": "message", "content": [', b"[]", FINAL]
    server = fake_anthropic(lambda body, n: (200, bodies[min(n, len(bodies)) - 1]))
    step_id, status = _run_agent(dsn, server, workers, ("succeeded", "dead_letter"))
    assert status == "succeeded"
    assert _result(dsn, step_id)["answer"] == "all done"
    assert len(server.requests) == 4
    assert _attempts(dsn, step_id) == 1  # retried within the attempt, like a 5xx
    errors = _api_errors(dsn, step_id)
    assert [e["status"] for e in errors] == [200, 200, 200]
    assert "not a message" in errors[0]["message"] and "not JSON" in errors[1]["message"]


def test_a_request_the_api_refuses_fails_the_step_without_asking_again(
    dsn: str, fake_anthropic: Any, workers: Any
) -> None:
    server = fake_anthropic(lambda body, n: (400, error_body(400)))
    step_id, status = _run_agent(dsn, server, workers, ("succeeded", "dead_letter"))
    assert status == "dead_letter"
    assert len(server.requests) == 1  # neither within the attempt nor in another attempt
    assert _attempts(dsn, step_id) == 1
    (error,) = _api_errors(dsn, step_id)
    assert error["status"] == 400 and error["refused"] is True


def test_a_paused_turn_is_sent_back_and_continued(dsn: str, fake_anthropic: Any, workers: Any) -> None:
    paused = message([{"type": "text", "text": "Searching. "}], stop_reason="pause_turn")

    def reply(body: dict[str, Any], n: int) -> tuple[int, dict[str, Any]]:
        return 200, paused if n == 1 else message([{"type": "text", "text": "Found it."}])

    server = fake_anthropic(reply)
    step_id, status = _run_agent(dsn, server, workers, ("succeeded", "dead_letter"))
    assert status == "succeeded"
    assert len(server.requests) == 2
    # the paused assistant turn went back as it was, last in the conversation
    assert server.requests[1]["messages"][-1] == {"role": "assistant", "content": paused["content"]}
    result = _result(dsn, step_id)
    assert result["answer"] == "Searching. Found it." and result["stop_reason"] == "end_turn"
    assert result["iterations"] == 2
