"""
OpenTelemetry traces: an in-memory exporter receives the spans of a run whose first attempt was
killed (kill -9 in a worker process) and reclaimed, all in the trace the run was submitted under,
with GenAI attributes on the model calls; a fan-out's children join their run's trace too.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import agent_recipes  # noqa: F401  (the test tools)
from agent_support import fake_anthropic  # noqa: F401  (fixture)
from pgflight import db, tracing
from pgflight.recipes import load_modules
from pgflight.worker import Worker
from test_agent_loop import _turns
from worker_support import one, wait_for, workers  # noqa: F401  (fixture)


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exp = InMemorySpanExporter()
    tracing.configure(exp, batch=False, service_name="pgflight-test")
    yield exp
    tracing.shutdown()


def _run_worker_until(dsn: str, done: Any, what: str) -> None:
    w = Worker(dsn, load_modules(["pgflight.agent.loop", "pgflight_demo"]), lease_s=2.0, name="traced-worker")
    t = threading.Thread(target=w.run, daemon=True)
    t.start()
    try:
        wait_for(done, 40, what)
    finally:
        w.stop()
        t.join(20)


def test_a_killed_and_reclaimed_agent_run_is_one_trace(
    dsn: str, fake_anthropic: Any, workers: Any, exporter: InMemorySpanExporter, monkeypatch: Any
) -> None:
    server = fake_anthropic(_turns(4, {2: ("crash", {"at_iteration": 2})}))
    env = {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": server.url}
    with psycopg.connect(dsn, autocommit=True) as conn:
        db.create_workspace(conn, "w")
        with tracing.span("submit review"):
            sub = db.submit_run(
                conn,
                "w",
                "agent",
                {
                    "task": "four turns",
                    "model": "claude-sonnet-4-6",
                    "provider": "anthropic",
                    "tools": ["note", "crash"],
                },
            )
        (submit_span,) = exporter.get_finished_spans()
        trace_id, submit_id = submit_span.context.trace_id, submit_span.context.span_id
        stored = db.run_trace_context(conn, sub.run_id)
        assert stored is not None and stored.startswith(f"00-{trace_id:032x}-{submit_id:016x}-")

        # the first attempt dies in iteration 2 (kill -9 in a tool): its spans die with it
        w1 = workers(dsn, "--lease", "2", recipes="agent_recipes", env=env)
        wait_for(lambda: w1.proc.poll() is not None, 30, "the worker to kill itself in iteration 2")
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        _run_worker_until(
            dsn,
            lambda: (
                one(conn, "select status from pgflight.step_status where step_id = %s", sub.step_id)
                == "succeeded"
            ),
            "the reclaimed agent to finish",
        )
        costs = conn.execute(
            "select iteration, input_tokens, output_tokens, usd::float8 from pgflight.costs c"
            " join pgflight.attempts a on a.attempt_id = c.attempt_id"
            " where a.attempt_no = 2 order by iteration"
        ).fetchall()
        assert (
            one(
                conn,
                "select count(*) from pgflight.attempts where step_id = %s and status = 'lease_expired'",
                sub.step_id,
            )
            == 1
        )

    spans = [s for s in exporter.get_finished_spans() if s is not submit_span]
    assert spans and {s.context.trace_id for s in spans} == {trace_id}  # one trace, across processes
    (attempt,) = [s for s in spans if s.name == "pgflight.attempt agent"]
    assert attempt.parent is not None and attempt.parent.span_id == submit_id
    attrs = dict(attempt.attributes or {})
    assert attrs["pgflight.run_id"] == sub.run_id and attrs["pgflight.step_id"] == sub.step_id
    assert attrs["pgflight.attempt_no"] == 2 and attrs["pgflight.worker"] == "traced-worker"
    assert attrs["pgflight.recipe"] == "agent" and attrs["pgflight.outcome"] == "finishing"

    calls = sorted((s for s in spans if s.name == "chat claude-sonnet-4-6"), key=lambda s: s.start_time or 0)
    assert [c.attributes["pgflight.iteration"] for c in calls] == [r[0] for r in costs] == [3, 4]  # type: ignore[index]
    for call, (_, tokens_in, tokens_out, usd) in zip(calls, costs, strict=True):
        a = dict(call.attributes or {})
        assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.request.model"] == "claude-sonnet-4-6"
        assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (tokens_in, tokens_out)
        assert a["pgflight.usd"] == pytest.approx(usd)
        assert call.parent is not None and call.parent.span_id == attempt.context.span_id
    tools = [s for s in spans if s.name.startswith("execute_tool ")]
    # iteration 2's interrupted crash call runs again (no side effects), then iteration 3's note
    assert [t.attributes["gen_ai.tool.name"] for t in tools] == ["crash", "note"]  # type: ignore[index]
    assert all(t.parent is not None and t.parent.span_id == attempt.context.span_id for t in tools)


def test_children_of_a_run_submitted_outside_any_span_share_a_derived_trace(
    dsn: str, exporter: InMemorySpanExporter
) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        db.create_workspace(conn, "w")
        sub = db.submit_run(conn, "w", "fanout", {"n": 3})
        assert db.run_trace_context(conn, sub.run_id) is None
        _run_worker_until(
            dsn,
            lambda: (
                one(conn, "select status from pgflight.run_list where run_id = %s", sub.run_id) == "succeeded"
            ),
            "the fan-out to finish",
        )
    spans = exporter.get_finished_spans()
    names = sorted(s.name for s in spans)
    assert names == ["pgflight.attempt fanout"] * 2 + ["pgflight.attempt square"] * 3
    assert len({s.context.trace_id for s in spans}) == 1
    assert {dict(s.attributes or {})["pgflight.run_id"] for s in spans} == {sub.run_id}
