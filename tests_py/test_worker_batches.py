"""
Claims in whole batches under a backlog: while the last claim came back full, a freed
slot waits up to --claim-coalesce seconds for the rest of a batch, so one claim_batch takes up to
--batch-size rows instead of what one completion freed; a claim that found the queue short ends
the backlog. A real worker process against the test server; it logs ``claimed N of M`` at DEBUG.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgflight import db
from worker_support import WorkerProc, one, wait_for, worker_factory

Conn = psycopg.Connection[Any]


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Callable[..., WorkerProc]]:
    yield from worker_factory(tmp_path)


def _claims(w: WorkerProc) -> list[int]:
    return [int(m) for m in re.findall(r"claimed (\d+) of \d+", w.output())]


def test_a_backlog_is_claimed_in_whole_batches(
    conn: Conn, dsn: str, workers: Callable[..., WorkerProc]
) -> None:
    db.create_workspace(conn, "batches")
    w = workers(
        # a window long enough for a slower machine's completions to free most of a batch in it
        dsn,
        "--log-level",
        "DEBUG",
        "--concurrency",
        "8",
        "--batch-size",
        "8",
        "--claim-coalesce",
        "0.25",
    )
    wait_for(lambda: "listening on pgflight_ready" in w.output(), 20, "the LISTEN probe to pass")
    db.submit_many(conn, "batches", [{"recipe": "noop", "input": {"i": i}} for i in range(400)])
    wait_for(
        lambda: one(conn, "select count(*) = 400 from pgflight.run_list where status = 'succeeded'") or None,
        60,
        "the 400 runs to succeed",
    )
    got = [n for n in _claims(w) if n > 0]
    assert sum(got) == 400
    # without coalescing, each claim takes what the last completion freed: about half a batch
    assert sum(got) / len(got) >= 6, got


def test_a_worker_stopped_while_it_waits_for_slots_claims_nothing_more(
    conn: Conn, dsn: str, workers: Callable[..., WorkerProc]
) -> None:
    """SIGTERM during the coalescing wait: no claim after the stop (a step started then would be cut
    off at the grace period and run again elsewhere, C39). Found by the attack review."""
    db.create_workspace(conn, "stopping")
    w = workers(
        dsn,
        "--log-level",
        "DEBUG",
        "--concurrency",
        "2",
        "--batch-size",
        "2",
        "--claim-coalesce",
        "1",
        "--grace",
        "1",
    )
    wait_for(lambda: "listening on pgflight_ready" in w.output(), 20, "the LISTEN probe to pass")
    # a long and a short step fill the first batch (a full claim: a backlog); more wait behind them
    runs = [{"recipe": "sleep", "input": {"seconds": 60}}, {"recipe": "sleep", "input": {"seconds": 0.2}}]
    runs += [{"recipe": "sleep", "input": {"seconds": 60}} for _ in range(4)]
    db.submit_many(conn, "stopping", runs)
    succeeded = "select count(*) from pgflight.step_attempts where status = 'succeeded'"
    wait_for(lambda: one(conn, succeeded) == 1 or None, 20, "the short step to succeed")
    # its slot now waits up to 1 s for the other one to free
    w.signal(signal.SIGTERM)
    assert w.wait(30) == 0
    log = w.output()
    stop = log.index("no more claims")
    assert re.search(r"claimed [1-9]\d* of \d+", log[stop:]) is None, log[stop:]
