"""
Claims in whole batches under a backlog (issue 18): while the last claim came back full, a freed
slot waits up to --claim-coalesce seconds for the rest of a batch, so one claim_batch takes up to
--batch-size rows instead of what one completion freed; a claim that found the queue short ends
the backlog. A real worker process against the test server; it logs ``claimed N of M`` at DEBUG.
"""

from __future__ import annotations

import re
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
        dsn, "--log-level", "DEBUG", "--concurrency", "8", "--batch-size", "8", "--claim-coalesce", "0.05"
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
