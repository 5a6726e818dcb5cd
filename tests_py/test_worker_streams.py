"""
Streams through real worker processes: a recipe streaming 1,000 chunks is read whole and in order
by a reader that reconnects midway; a worker SIGKILLed mid-stream leaves its chunks marked with
attempt 1, and the next attempt's follow, marked 2. The sweeps run on a thread of the test, as
pg_cron's sweep_loop would run them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgflight import db, models
from test_cli import pgflight
from worker_support import step_status, sweeping, wait_for, worker_factory

FAST = ("--poll", "0.3")


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """Worker subprocesses, SIGKILLed at teardown."""
    yield from worker_factory(tmp_path)


@pytest.fixture
def sweeper(dsn: str) -> Iterator[None]:
    """run_sweeps every 0.2 s on a connection of its own, for as long as the test runs."""
    with sweeping(dsn):
        yield


def _follow(
    dsn: str, run_id: int, channel: str, after: int, *, until: Callable[[list[models.StreamChunk]], bool]
) -> list[models.StreamChunk]:
    """Read on a connection of its own from `after` (waiting 1 s per call) until `until(got)`."""
    got: list[models.StreamChunk] = []
    with psycopg.connect(dsn, autocommit=True) as c:
        for _ in range(200):
            got += db.stream_read(c, run_id, channel, after_seq=after, limit=100, wait_s=1.0)
            if got:
                after = got[-1].seq
            if until(got):
                return got
    pytest.fail(f"stream {channel} of run {run_id}: still waiting after {len(got)} chunks")


def test_a_stream_of_1000_chunks_is_read_whole_and_in_order_by_a_reader_that_reconnects(
    conn, dsn, workers
) -> None:
    db.create_workspace(conn, "w")
    run = db.submit_run(conn, "w", "stream_count", {"n": 1000, "every_s": 0.002})
    workers(dsn, *FAST, recipes="stream_recipes")
    first = _follow(dsn, run.run_id, "count", 0, until=lambda got: len(got) >= 300)  # then hangs up
    rest = _follow(
        dsn, run.run_id, "count", first[-1].seq, until=lambda got: got[-1].seq >= 1000 if got else False
    )
    chunks = first + rest
    assert [c.seq for c in chunks] == list(range(1, 1001))
    assert [c.chunk for c in chunks] == [f"chunk-{i}" for i in range(1000)]
    assert {c.attempt_no for c in chunks} == {1}
    wait_for(lambda: step_status(conn, run.step_id) == "succeeded", 15, "the step to succeed")
    batches = conn.execute(
        "select count(distinct written_at) from pgflight.stream_chunks where run_id = %s", [run.run_id]
    ).fetchone()
    assert batches is not None and batches[0] < 200, f"{batches[0]} commits for 1,000 chunks: not batched"


@pytest.mark.slow  # a crash test: a lease of 2 s lapses before the retry
def test_a_worker_sigkilled_mid_stream_leaves_attempt_1s_chunks_then_attempt_2s(
    conn, dsn, workers, sweeper
) -> None:
    db.create_workspace(conn, "w")
    run = db.submit_run(conn, "w", "stream_then_hang", {}, options={"lease_s": 2})
    a = workers(dsn, "--lease", "2", *FAST, recipes="stream_recipes")
    first = _follow(dsn, run.run_id, "tokens", 0, until=lambda got: len(got) >= 5)
    a.kill()
    workers(dsn, "--lease", "2", *FAST, recipes="stream_recipes")
    rest = _follow(dsn, run.run_id, "tokens", first[-1].seq, until=lambda got: len(got) >= 5)
    chunks = first + rest
    assert [(c.seq, c.attempt_no, c.chunk) for c in chunks] == [
        *((i + 1, 1, f"a1-{i}") for i in range(5)),
        *((i + 6, 2, f"a2-{i}") for i in range(5)),
    ]
    assert chunks[0].attempt_id != chunks[-1].attempt_id
    wait_for(lambda: step_status(conn, run.step_id) == "succeeded", 20, "the second attempt to succeed")


def test_watch_stream_prints_a_runs_stream_as_it_is_written_and_exits_with_the_run(
    conn, dsn, workers
) -> None:
    db.create_workspace(conn, "w")
    run = db.submit_run(conn, "w", "stream_count", {"n": 200, "every_s": 0.005})
    workers(dsn, *FAST, recipes="stream_recipes")
    watched = pgflight(dsn, "watch", str(run.run_id), "--stream", "--interval", "0.2", timeout_s=60)
    assert watched.returncode == 0, watched.stderr
    assert watched.stdout.startswith("".join(f"chunk-{i}" for i in range(200)))
    assert "succeeded" in watched.stdout.splitlines()[-1]
    as_json = pgflight(dsn, "watch", str(run.run_id), "--stream", "--json", timeout_s=60)
    lines = [json.loads(x) for x in as_json.stdout.splitlines() if x.startswith('{"channel"')]
    assert [(x["seq"], x["chunk"], x["attempt_no"]) for x in lines] == [
        (i + 1, f"chunk-{i}", 1) for i in range(200)
    ]
