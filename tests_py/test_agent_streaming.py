"""
The agent streams through real worker processes and the real `anthropic` SDK against a local
server speaking server-sent events: the text a reader follows on the run's stream equals the text
the flight recorder holds; a `max_usd` (and reservation) that pays for half a response stops the
stream there, and the ledger holds what was paid: the input and the output tokens received; the
arguments of the tool calls, streamed as they arrive to `<channel>.tool_input`, join to the
inputs the recorded tool_use blocks hold. The offline model (the default, no API key) streams
too: `pgflight watch RUN --stream` shows its text arriving in several batches while the step
runs, and the agent records the same transcript as without streaming.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import psycopg

import agent_recipes  # noqa: F401  (the agent recipe with the test tools)
from agent_support import fake_anthropic, message, tool_use  # noqa: F401
from pgflight import db
from pgflight.agent.loop import tool_input_channel
from test_cli import pgflight
from worker_support import one, wait_for, workers  # noqa: F401

ENV = {"PGFLIGHT_AGENT_BACKOFF_S": "0.01", "ANTHROPIC_API_KEY": "test-key"}
LONG = "".join(f"word{i:03d} " for i in range(50))  # 400 characters: 100 output tokens at 4 a token


def _submit(conn: Any, **inp: Any) -> Any:
    db.create_workspace(conn, "w")
    return db.submit_run(
        conn,
        "w",
        "agent",
        {"task": "answer", "model": "claude-sonnet-4-6", "provider": "anthropic", "tools": ["note"], **inp},
        options={"max_attempts": 2},
    )


def _text(conn: Any, run_id: int) -> str:
    return "".join(c.chunk for c in db.stream_read(conn, run_id, "text", limit=10000))


def _status(conn: Any, step_id: int) -> str:
    return str(one(conn, "select status from pgflight.step_status where step_id = %s", step_id))


def test_the_streamed_text_equals_the_recorded_text(dsn: str, fake_anthropic: Any, workers: Any) -> None:
    def reply(body: dict[str, Any], n: int) -> tuple[Any, ...]:
        if n == 1:
            return 200, message(
                tool_use("tu_1", "note", {"text": "x"}, text="Let me note that. "), output_tokens=20
            )
        return 200, message([{"type": "text", "text": LONG}], output_tokens=100)

    server = fake_anthropic(reply)
    with psycopg.connect(dsn, autocommit=True) as conn:
        sub = _submit(conn, stream="text")
        workers(dsn, "--lease", "5", recipes="agent_recipes", env={**ENV, "ANTHROPIC_BASE_URL": server.url})
        wait_for(lambda: _status(conn, sub.step_id) in ("succeeded", "dead_letter"), 60, "the agent to end")
        assert _status(conn, sub.step_id) == "succeeded"
        assert all(r.get("stream") is True for r in server.requests) and len(server.requests) == 2
        recorded = "".join(
            r[0]
            for r in conn.execute(
                "select content->>'text' from pgflight.traces t"
                " join pgflight.agent_runs a on a.id = t.agent_run_id"
                " where a.run_id = %s and t.block_type = 'text' and t.iteration > 0"
                " order by t.iteration, t.seq",
                [sub.run_id],
            ).fetchall()
        )
        assert recorded == "Let me note that. " + LONG
        assert _text(conn, sub.run_id) == recorded
        # the tool call folded from its input_json deltas was run with its arguments
        use = one(
            conn,
            "select content from pgflight.traces t join pgflight.agent_runs a on a.id = t.agent_run_id"
            " where a.run_id = %s and t.block_type = 'tool_use'",
            sub.run_id,
        )
        assert use["input"] == {"text": "x"}
        tokens = one(conn, "select sum(output_tokens) from pgflight.costs where run_id = %s", sub.run_id)
        assert tokens == 120  # the server's own counts (message_delta), as without streaming


def test_a_budget_for_half_a_response_stops_the_stream_there_and_the_ledger_holds_what_was_paid(
    dsn: str, fake_anthropic: Any, workers: Any
) -> None:
    # input 1,000 tokens at USD 3/M = 0.003; 100 output tokens at USD 15/M = 0.0015: half of them
    # fit in 0.00375 (the reservation is est_usd, the cap max_usd)
    server = fake_anthropic(
        lambda body, n: (
            200,
            message([{"type": "text", "text": LONG}], input_tokens=1000, output_tokens=100),
        ),
        delta_delay_s=0.005,
    )
    with psycopg.connect(dsn, autocommit=True) as conn:
        sub = _submit(conn, stream="text", max_usd=0.00375, est_usd=0.00375)
        workers(dsn, "--lease", "5", recipes="agent_recipes", env={**ENV, "ANTHROPIC_BASE_URL": server.url})
        wait_for(lambda: _status(conn, sub.step_id) in ("succeeded", "dead_letter"), 60, "the agent to end")
        assert _status(conn, sub.step_id) == "dead_letter"
        error = one(
            conn,
            "select error from pgflight.step_attempts where step_id = %s order by attempt_no desc limit 1",
            sub.step_id,
        )
        assert "budget_exhausted" in error["message"], error
        assert len(server.requests) == 1  # a budget stop is not retried
        total_events = 3 + 2 + 100 + 2  # message_start, ping, block start, 100 deltas, block stop, ...
        assert server.events_sent < total_events, "the server sent the whole response"
        cost = conn.execute(
            "select input_tokens, output_tokens, usd, stop_reason from pgflight.costs where run_id = %s",
            [sub.run_id],
        ).fetchall()
        assert cost == [(1000, 50, Decimal("0.00375000"), "budget_exhausted")]
        spent = one(
            conn, "select spent_usd from pgflight.budgets where scope = 'step' and step_id = %s", sub.step_id
        )
        assert spent == Decimal("0.00375")
        text = one(
            conn,
            "select content->>'text' from pgflight.traces t"
            " join pgflight.agent_runs a on a.id = t.agent_run_id"
            " where a.run_id = %s and t.block_type = 'text' and t.iteration > 0",
            sub.run_id,
        )
        assert text == LONG[:200]  # 50 tokens of 4 characters: the half that was paid for
        assert _text(conn, sub.run_id) == text
        stop = one(
            conn,
            "select content from pgflight.traces t join pgflight.agent_runs a on a.id = t.agent_run_id"
            " where a.run_id = %s and t.block_type = 'budget_exhausted'",
            sub.run_id,
        )
        assert stop["output_tokens"] == 50 and stop["reservation_usd"] == "0.00375"


def test_the_streamed_tool_input_joins_to_the_recorded_tool_use_input(
    dsn: str, fake_anthropic: Any, workers: Any
) -> None:
    first = {"text": "a note long enough to arrive in many pieces", "n": [1, 2, {"deep": 'é\\"q'}]}
    second = {"text": "and another"}

    def reply(body: dict[str, Any], n: int) -> tuple[Any, ...]:
        if n == 1:
            content = [
                {"type": "text", "text": "Two notes. "},
                {"type": "tool_use", "id": "tu_a", "name": "note", "input": first},
                {"type": "tool_use", "id": "tu_b", "name": "note", "input": second},
            ]
            return 200, message(content, output_tokens=40)
        if n == 2:
            return 200, message(tool_use("tu_c", "note", {"text": "third"}), output_tokens=10)
        return 200, message([{"type": "text", "text": "done"}], output_tokens=1)

    server = fake_anthropic(reply, chunk_chars=5, delta_delay_s=0.02)  # 18 deltas of tu_a: 360 ms
    with psycopg.connect(dsn, autocommit=True) as conn:
        sub = _submit(conn, stream="text")
        workers(dsn, "--lease", "5", recipes="agent_recipes", env={**ENV, "ANTHROPIC_BASE_URL": server.url})
        wait_for(lambda: _status(conn, sub.step_id) in ("succeeded", "dead_letter"), 60, "the agent to end")
        assert _status(conn, sub.step_id) == "succeeded"
        chunks = db.stream_read(conn, sub.run_id, tool_input_channel("text"), limit=10000)
        pieces = [json.loads(c.chunk) for c in chunks]
        # in pieces as they arrived, the deltas of one call within one batch joined in one chunk
        per_batch = [(c.written_at, json.loads(c.chunk)["id"]) for c in chunks]
        assert len(per_batch) == len(set(per_batch)), per_batch
        assert sum(1 for _, i in per_batch if i == "tu_a") >= 3, per_batch
        joined: dict[str, str] = {}
        for p in pieces:
            assert set(p) == {"iteration", "index", "id", "name", "partial_json"}, p
            joined[p["id"]] = joined.get(p["id"], "") + p["partial_json"]
        where = {p["id"]: (p["iteration"], p["index"], p["name"]) for p in pieces}
        assert where == {"tu_a": (1, 1, "note"), "tu_b": (1, 2, "note"), "tu_c": (2, 0, "note")}
        recorded = {
            r[0]["id"]: r[0]["input"]
            for r in conn.execute(
                "select content from pgflight.traces t join pgflight.agent_runs a on a.id = t.agent_run_id"
                " where a.run_id = %s and t.block_type = 'tool_use' order by t.iteration, t.seq",
                [sub.run_id],
            ).fetchall()
        }
        assert recorded == {"tu_a": first, "tu_b": second, "tu_c": {"text": "third"}}
        assert {k: json.loads(v) for k, v in joined.items()} == recorded
        # the text channel holds the text only
        assert _text(conn, sub.run_id) == "Two notes. done"


def _transcript(conn: Any, run_id: int) -> list[tuple[Any, ...]]:
    return [
        tuple(r)
        for r in conn.execute(
            "select t.iteration, t.seq, t.role, t.block_type, t.content from pgflight.traces t"
            " join pgflight.agent_runs a on a.id = t.agent_run_id where a.run_id = %s"
            " order by t.iteration, t.seq",
            [run_id],
        ).fetchall()
    ]


def _split_objects(out: str) -> tuple[str, list[dict[str, Any]]]:
    """The text of `out` without the tool-input objects printed into it, and those objects."""
    decoder, text, objects, at = json.JSONDecoder(), [], [], 0
    while (start := out.find('{"iteration"', at)) >= 0:
        text.append(out[at:start])
        obj, at = decoder.raw_decode(out, start)
        objects.append(obj)
    return "".join([*text, out[at:]]), objects


def test_the_offline_model_streams_live_and_records_what_it_records_without_streaming(
    dsn: str, workers: Any
) -> None:
    task = "summarise " + " ".join(f"part{i}" for i in range(40))  # a summary of about 100 deltas
    inp = {"task": task, "tools": ["note"]}  # no model, no provider: the offline model, by default
    with psycopg.connect(dsn, autocommit=True) as conn:
        db.create_workspace(conn, "w")
        plain = db.submit_run(conn, "w", "agent", inp)
        streamed = db.submit_run(conn, "w", "agent", {**inp, "stream": "text"})
        workers(dsn, recipes="agent_recipes", env={"PGFLIGHT_OFFLINE_DELTA_MS": "10"})
        watched = pgflight(dsn, "watch", str(streamed.run_id), "--stream", "--interval", "0.2", timeout_s=60)
        assert watched.returncode == 0, watched.stderr
        wait_for(lambda: _status(conn, plain.step_id) == "succeeded", 60, "the plain agent to end")
        assert _status(conn, streamed.step_id) == "succeeded"
        # recorded exactly as without streaming
        assert _transcript(conn, streamed.run_id) == _transcript(conn, plain.run_id)
        assert _text(conn, plain.run_id) == "" and db.stream_channels(conn, plain.run_id) == []
        recorded = "".join(
            r[4]["text"] for r in _transcript(conn, streamed.run_id) if r[3] == "text" and r[0] > 0
        )
        assert recorded.startswith("Calling note.Done: summarise part0 part1")
        assert _text(conn, streamed.run_id) == recorded
        # watch printed both channels as they came: the text, and the tool input's objects in between
        shown, objects = _split_objects(watched.stdout.rsplit("\nrun ", 1)[0])
        assert shown.strip() == recorded.strip()
        assert [o["name"] for o in objects] == ["note"] * len(objects) and objects
        assert "[text]" in watched.stderr and "[text.tool_input]" in watched.stderr
        # live: the text reached the database in many batches, the first well before the step ended
        chunks = db.stream_read(conn, streamed.run_id, "text", limit=10000)
        batches = sorted({c.written_at for c in chunks})
        finished = one(
            conn, "select max(finished_at) from pgflight.step_attempts where step_id = %s", streamed.step_id
        )
        assert len(batches) >= 5, len(batches)
        # the deltas of a call within one batch are one chunk: at most a chunk a batch and call
        assert len(chunks) <= len(batches) + 1, (len(chunks), len(batches))
        assert (finished - batches[0]).total_seconds() > 0.3
        # the tool call's input streamed too, and joins to the recorded input
        pieces = [json.loads(c.chunk) for c in db.stream_read(conn, streamed.run_id, "text.tool_input")]
        use = next(r[4] for r in _transcript(conn, streamed.run_id) if r[3] == "tool_use")
        assert {p["id"] for p in pieces} == {use["id"]}
        assert json.loads("".join(p["partial_json"] for p in pieces)) == use["input"]
