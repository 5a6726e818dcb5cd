#!/usr/bin/env python3
"""
Streams (docs/streams.md): the delay from a token's arrival at the worker to a reader seeing it,
and the WAL a streamed token costs, at the default batching.

A writer thread plays a model answering at ``--rate`` tokens per second (``--tokens`` tokens of
about 4 characters): each token goes to ``StreamWriter.write`` (the recipe API, ``ctx.stream``)
the instant it "arrives"; the writer batches as a worker does (every 50 ms or 16 KiB: one
``stream_write`` per batch). A reader thread on its own connection follows the stream with
``stream_read(..., wait_s = 1)``, as a client in any language would. Delay = the reader's return
minus the token's arrival (same process, one monotonic clock). WAL: ``pg_current_wal_lsn`` before
the first and after the last write, per token and per batch; beside it, the WAL of recording the
same text once as an agent iteration without streaming (``record_model_call`` with one text block
of the whole answer): what the flight recorder writes for it anyway.

    python bench/stream_bench.py [--tokens 2000] [--rate 100] [--dsn DSN]

``--agent``: the agent iteration with and without streaming, paired in one run. The agent loop
(``AgentLoop``, in this process, on one connection as a worker's recipe thread uses its pool)
runs agents of ``--iterations`` model calls against a model that answers ``--tokens-per-call``
tokens (text of 4-character tokens and a tool call, the last call text only) at ``--rate``
tokens per second: whole after the generation time (no streaming) or as its events, one delta a
token (streaming to channel ``text``, its tool input to ``text.tool_input``). Each round runs one
agent of each kind, alternating which goes first; per kind, the median ms per iteration and the
WAL per iteration, and the ratio streaming / not. ``--rate 0`` answers at once: the engine's own
cost of streaming. WAL per streamed token = (WAL streaming - WAL not) / tokens streamed.

Without --dsn a throwaway cluster (fsync and synchronous_commit on) is made and removed. Prints
one JSON object; ms and bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import percentile, throwaway_cluster

from pgflight import db, streams
from pgflight.agent import providers as prov
from pgflight.agent.loop import AgentInput, AgentLoop
from pgflight.agent.tools import tool
from pgflight.recipes import StepContext


def _lsn(c: psycopg.Connection[Any]) -> int:
    return int(c.execute("select pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()[0])  # type: ignore[index]


def _held(c: psycopg.Connection[Any], recipe: str) -> tuple[int, int, int]:
    run = db.submit_run(c, "bench", recipe, {})
    w = db.register_worker(c, f"bench-{recipe}")
    claim = db.claim_batch(c, w, batch_size=1, lease_s=600, recipes=[recipe])[0]
    db.start_step(c, claim.attempt_id, claim.fencing_token)
    return run.run_id, claim.attempt_id, claim.fencing_token


def measure(dsn: str, tokens: int, rate: float) -> dict[str, Any]:
    words = [f"t{i:03d} "[:5] for i in range(tokens)]
    with psycopg.connect(dsn, autocommit=True) as c, psycopg.connect(dsn, autocommit=True) as wc:
        run_id, attempt, token = _held(c, "stream-bench")
        writes = [0]

        def send(ch: str, chunks: list[str]) -> Any:
            writes[0] += 1
            return db.stream_write(wc, attempt, token, ch, chunks)

        writer = streams.StreamWriter("tokens", send)
        arrived: list[float] = [0.0] * tokens
        seen: list[float] = [0.0] * tokens
        done = threading.Event()

        def read() -> None:
            after = 0
            with psycopg.connect(dsn, autocommit=True) as rc:
                while after < tokens and not done.is_set():
                    got = db.stream_read(rc, run_id, "tokens", after_seq=after, limit=1000, wait_s=1.0)
                    now = time.perf_counter()
                    for k in got:
                        seen[k.seq - 1] = now
                    if got:
                        after = got[-1].seq

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        time.sleep(0.2)
        lsn0 = _lsn(c)
        start = time.perf_counter()
        for i, w in enumerate(words):
            due = start + i / rate
            pause = due - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            arrived[i] = time.perf_counter()
            writer.write(w)
        writer.close()
        reader.join(30)
        done.set()
        lsn1 = _lsn(c)
        delays = [(s - a) * 1000 for a, s in zip(arrived, seen, strict=True) if s]

        # the same answer recorded once, as an agent iteration without streaming
        _, a2, t2 = _held(c, "recorder-bench")
        ar = c.execute(
            "select agent_run_id from pgflight.begin_agent_run(%s, %s, %s)",
            [a2, t2, Jsonb({"model": "claude-sonnet-4-6", "task": "t"})],
        ).fetchone()[0]  # type: ignore[index]
        c.execute("select * from pgflight.reserve_budget(%s, %s, %s, 1, 1)", [a2, t2, ar])
        r0 = _lsn(c)
        c.execute(
            "select * from pgflight.record_model_call(%s, %s, %s, 1, %s, %s, 'claude-sonnet-4-6')",
            [
                a2,
                t2,
                ar,
                Jsonb([{"type": "text", "text": "".join(words)}]),
                Jsonb({"input_tokens": 1000, "output_tokens": tokens}),
            ],
        )
        r1 = _lsn(c)
    return {
        "tokens": tokens,
        "rate_tokens_per_s": rate,
        "flush_ms": streams.flush_ms(),
        "flush_bytes": streams.flush_bytes(),
        "tokens_seen": len(delays),
        "stream_write_calls": writes[0],
        "delay_ms_p50": round(percentile(delays, 50), 1),
        "delay_ms_p99": round(percentile(delays, 99), 1),
        "delay_ms_max": round(max(delays), 1) if delays else None,
        "wal_bytes_per_token": round((lsn1 - lsn0) / tokens, 1),
        "wal_bytes_per_batch": round((lsn1 - lsn0) / max(writes[0], 1)),
        "wal_bytes_streamed": lsn1 - lsn0,
        "wal_bytes_record_model_call_same_text": r1 - r0,
    }


class PacedModel:
    """A model answering `tokens` tokens a call at `rate` tokens a second (0: at once)."""

    name = "paced"

    def __init__(self, tokens: int, rate: float, iterations: int) -> None:
        self.tokens, self.rate, self.iterations = tokens, rate, iterations

    def _answer(self, request: prov.Request) -> prov.Response:
        turn = sum(1 for m in request.messages if m["role"] == "assistant")
        text = "".join(f"w{i:02d} "[:4] for i in range(self.tokens - 8))
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if turn + 1 < self.iterations:  # about 8 tokens of arguments
            content.append(
                {"type": "tool_use", "id": f"toolu_{turn}", "name": "bench_echo", "input": {"text": "x" * 20}}
            )
        usage = {"input_tokens": 2000, "output_tokens": self.tokens}
        stop = "tool_use" if len(content) > 1 else "end_turn"
        return {
            "id": f"msg_{turn}",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }

    def create(self, request: prov.Request) -> prov.Response:
        answer = self._answer(request)
        if self.rate:  # as long as the same answer takes to stream: one delta a token
            deltas = sum(1 for e, _ in prov.message_events(answer, 4) if e == "content_block_delta")
            time.sleep(deltas / self.rate)
        return answer

    def stream(self, request: prov.Request, on_delta: prov.OnDelta) -> prov.Response:
        pause = 1 / self.rate if self.rate else 0.0
        start = time.perf_counter()

        def paced(events: list[tuple[str, dict[str, Any]]]) -> Any:
            n = 0
            for event in events:
                if event[0] == "content_block_delta" and pause:
                    n += 1
                    due = start + n * pause
                    if (wait := due - time.perf_counter()) > 0:
                        time.sleep(wait)
                yield event

        return prov.fold_stream(paced(prov.message_events(self._answer(request), 4)), on_delta)


MODEL = "claude-sonnet-4-6"


class Echo(BaseModel):
    text: str


@tool(description="Return the text.")
def bench_echo(args: Echo) -> str:
    return args.text


def _agent(c: psycopg.Connection[Any], model: PacedModel, stream: bool) -> tuple[float, int, int, int]:
    """One agent run in this process: (seconds, WAL bytes, stream chunks, stream_write calls)."""
    inp = {"task": "bench", "model": MODEL, "tools": ["bench_echo"], "max_tokens": 4096}
    if stream:
        inp["stream"] = "text"
    run = db.submit_run(c, "bench", "agent", inp)
    w = db.register_worker(c, "bench-agent")
    (claim,) = db.claim_batch(c, w, batch_size=1, lease_s=600, recipes=["agent"])
    db.start_step(c, claim.attempt_id, claim.fencing_token)
    ctx = StepContext(claim, AgentInput.model_validate(claim.input), call=lambda fn, *a, **k: fn(c, *a, **k))
    lsn0, t0 = _lsn(c), time.perf_counter()
    result = AgentLoop(ctx, ctx.input, provider=model).run()
    ctx.close_streams()
    t1, lsn1 = time.perf_counter(), _lsn(c)
    db.complete_step(c, claim.attempt_id, claim.fencing_token, result)
    assert result["iterations"] == model.iterations, result
    chunks, batches = 0, 0
    for ch in db.stream_channels(c, run.run_id):
        got = db.stream_read(c, run.run_id, ch.channel, limit=10000)
        chunks, batches = chunks + len(got), batches + len({k.written_at for k in got})
    return t1 - t0, lsn1 - lsn0, chunks, batches


def measure_agent(dsn: str, rounds: int, iterations: int, tokens: int, rate: float) -> dict[str, Any]:
    model = PacedModel(tokens, rate, iterations)
    got: dict[bool, list[tuple[float, int, int, int]]] = {False: [], True: []}
    with psycopg.connect(dsn, autocommit=True) as c:
        _agent(c, PacedModel(tokens, 0, iterations), True)  # warm: plans, the price cache
        for r in range(rounds):
            for stream in (r % 2 == 1, r % 2 == 0):
                got[stream].append(_agent(c, model, stream))

    def ms_per_iteration(stream: bool) -> float:
        return statistics.median(x[0] for x in got[stream]) * 1000 / iterations

    def wal_per_iteration(stream: bool) -> float:
        return statistics.median(x[1] for x in got[stream]) / iterations

    plain, streamed = ms_per_iteration(False), ms_per_iteration(True)
    chunks = statistics.median(x[2] for x in got[True])
    batches = statistics.median(x[3] for x in got[True])
    extra_wal = (wal_per_iteration(True) - wal_per_iteration(False)) * iterations
    return {
        "rounds": rounds,
        "iterations_per_agent": iterations,
        "tokens_per_call": tokens,
        "rate_tokens_per_s": rate,
        "flush_ms": streams.flush_ms(),
        "ms_per_iteration_not_streaming": round(plain, 2),
        "ms_per_iteration_streaming": round(streamed, 2),
        "ratio_streaming_to_not": round(streamed / plain, 3),
        "wal_bytes_per_iteration_not_streaming": round(wal_per_iteration(False)),
        "wal_bytes_per_iteration_streaming": round(wal_per_iteration(True)),
        "chunks_streamed_per_agent": chunks,
        "stream_write_calls_per_agent": batches,
        "wal_bytes_per_streamed_token": round(extra_wal / (tokens * iterations), 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=2000)
    ap.add_argument("--rate", type=float, default=100.0, help="tokens per second")
    ap.add_argument("--dsn", default=os.environ.get("PGFLIGHT_DSN"))
    ap.add_argument("--agent", action="store_true", help="the agent iteration with and without streaming")
    ap.add_argument("--rounds", type=int, default=5, help="--agent: agents of each kind")
    ap.add_argument("--iterations", type=int, default=5, help="--agent: model calls per agent")
    ap.add_argument("--tokens-per-call", type=int, default=100, help="--agent: output tokens per model call")
    args = ap.parse_args()

    def run(dsn: str) -> dict[str, Any]:
        if args.agent:
            return measure_agent(dsn, args.rounds, args.iterations, args.tokens_per_call, args.rate)
        return measure(dsn, args.tokens, args.rate)

    if args.dsn:
        with psycopg.connect(args.dsn, autocommit=True) as c:
            c.execute(
                "select pgflight.create_workspace('bench') where not exists"
                " (select from pgflight.workspaces where name = 'bench')"
            )
        out = run(args.dsn)
    else:
        with throwaway_cluster() as (_, dsn):
            out = run(dsn)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
