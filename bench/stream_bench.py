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

Without --dsn a throwaway cluster (fsync and synchronous_commit on) is made and removed. Prints
one JSON object; ms and bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import percentile, throwaway_cluster

from pgflight import db, streams


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=2000)
    ap.add_argument("--rate", type=float, default=100.0, help="tokens per second")
    ap.add_argument("--dsn", default=os.environ.get("PGFLIGHT_DSN"))
    args = ap.parse_args()
    if args.dsn:
        with psycopg.connect(args.dsn, autocommit=True) as c:
            c.execute(
                "select pgflight.create_workspace('bench') where not exists"
                " (select from pgflight.workspaces where name = 'bench')"
            )
        out = measure(args.dsn, args.tokens, args.rate)
    else:
        with throwaway_cluster() as (_, dsn):
            out = measure(dsn, args.tokens, args.rate)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
