"""
The reclaim's transition log (reclaim drain): since tables/step_attempts_retry_queue_event
a reclaimed lease's retry writes one events row (the lapsed attempt's end) and records its queued
(retry_scheduled) on the new attempt (queue_event_id, queue_delay_s), which run_events shows as the
row it was. This test holds run_events to what 0.8.0 wrote as two events rows: the same rows, ids,
order and details, after a drain of retries, dead letters, cancels and deadlines. (0.8.0 is
deployed from the plan before the 1.0 re-baseline, read from git; a revert across the re-baseline
does not exist, so the revert to 0.8.0 is no longer tested.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from core_helpers import Conn, claim, register, rows, scalar, set_clock, setup_engine, start_step, submit
from pgflight import migrate
from plan_support import release_project

RETRIES = "select count(*) from pgflight.run_events where reason = 'retry_scheduled'"
TAG = "@v0.8.0"  # the reclaim wrote both events rows up to here, in the plan before the re-baseline
LOG = (
    "select id, at, run_id, step_id, attempt_id, from_status, to_status, worker_id, actor, reason, detail"
    " from pgflight.run_events order by id"
)


def _reclaim(conn: Conn, limit: int = 1000) -> int:
    """reclaim_expired with the backoff's jitter drawn from a fixed seed (the same on both sides)."""
    conn.execute("select setseed(0.25)")
    return int(scalar(conn, "select pgflight.reclaim_expired(%s)", [limit]))


def _claim_all(conn: Conn, worker: int, lease_s: float, *, start_every: int = 2) -> None:
    """Claim everything claimable; start every `start_every`-th claim (both from-statuses are logged)."""
    for i, c in enumerate(claim(conn, worker, 100, lease_s)):
        if i % start_every == 0:
            start_step(conn, c)


def crash_and_drain(conn: Conn) -> list[tuple[Any, ...]]:
    """
    The same history on any version: runs whose leases lapse three times over (retries with jitter
    and a backoff that is no whole number of milliseconds, then the dead letter at the ceiling), a
    step at its ceiling at once, a cancel requested on a leased step, a deadline overrun under a live
    lease; every transition through the API, on a fake clock. Returns run_events in id order.
    """
    conn.execute("update pgflight.settings set allow_fake_clock = true")
    setup_engine(conn)
    set_clock(conn, 0)
    worker = register(conn, "crashed")
    for i in range(6):
        submit(conn, "flaky", {"i": i}, max_attempts=3, backoff={"base_s": 1.2345678, "jitter": 0.3})
    submit(conn, "once", {}, max_attempts=1)
    cancelled = submit(conn, "cancelme", {})
    submit(conn, "slow", {}, max_runtime_s=5, max_attempts=2, backoff={"base_s": 0, "jitter": 0})
    _claim_all(conn, worker, 30)
    conn.execute("select * from pgflight.cancel_run(%s, 'test')", [cancelled.run_id])
    set_clock(conn, 10)  # past the deadline of 'slow', inside every lease
    assert _reclaim(conn) == 1
    set_clock(conn, 40)  # every other lease lapsed
    assert _reclaim(conn, 3) == 3  # in two passes, as a drain takes them
    assert _reclaim(conn) == 5
    for t in (100, 200):
        set_clock(conn, t)
        _claim_all(conn, worker, 30, start_every=3)
        set_clock(conn, t + 50)
        assert _reclaim(conn) > 0
    leased = "select count(*) from pgflight.step_attempts where status in ('claimed', 'running')"
    assert scalar(conn, leased) == 0
    return [tuple(r.values()) for r in rows(conn, LOG)]


def _from_first(log: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    first = log[0][0]
    return [(r[0] - first, *r[1:]) for r in log]


def test_a_drained_reclaims_log_reads_as_0_8_wrote_it(dsn: str, empty_dsn: str, tmp_path: Path) -> None:
    """The same history at 0.8.0 and at HEAD: run_events the same rows, one events row less per retry."""
    migrate.deploy(empty_dsn, to=TAG, root=release_project(tmp_path / "old"))
    with psycopg.connect(empty_dsn, autocommit=True) as old, psycopg.connect(dsn, autocommit=True) as new:
        before = crash_and_drain(old)
        after = crash_and_drain(new)
        retries = int(scalar(new, RETRIES))
        assert retries == 13  # each flaky run twice (its third lapse dead-letters it), slow once
        old_rows = int(scalar(old, "select count(*) from pgflight.events"))
        new_rows = int(scalar(new, "select count(*) from pgflight.events"))
    # the events ids counted from each log's first (a 0.8 deploy took one id of the sequence, the
    # re-baselined plan's takes none)
    assert _from_first(after) == _from_first(before)
    assert {r[9] for r in after} >= {"retry_scheduled", "lease_expired", "deadline_exceeded", "cancelled"}
    assert new_rows == old_rows - retries, "a reclaimed lease's retry writes no events row of its own"
