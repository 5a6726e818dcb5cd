"""
Wake-ups with several worker processes: a NOTIFY wakes one idle process per recipe
group, not all of them; no wake is lost when the chosen process is gone or frozen; a burst still
reaches every idle process; a plain NOTIFY (any-language sender) still wakes everyone.
Real worker processes against the test server; each logs ``claimed N of M`` at DEBUG.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgflight import db
from pgflight.worker import WakeTickets, claim_with_ticket
from worker_support import WorkerProc, one, step_status, wait_for, worker_factory

Conn = psycopg.Connection[Any]


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Callable[..., WorkerProc]]:
    """Worker subprocesses, SIGKILLed at teardown."""
    yield from worker_factory(tmp_path)


def _start(workers: Callable[..., WorkerProc], dsn: str, n: int, *args: str, **kw: Any) -> list[WorkerProc]:
    ws = [workers(dsn, "--log-level", "DEBUG", *args, **kw) for _ in range(n)]
    for w in ws:
        wait_for(lambda w=w: "listening on pgflight_ready" in w.output(), 20, "the LISTEN probe to pass")
    time.sleep(0.5)  # the catch-up claims after LISTEN are over
    return ws


def _claims(ws: list[WorkerProc]) -> list[tuple[int, int]]:
    """(claimed, wanted) of every claim the workers logged so far."""
    return [(int(m[0]), int(m[1])) for w in ws for m in re.findall(r"claimed (\d+) of (\d+)", w.output())]


def _empty(ws: list[WorkerProc]) -> int:
    return sum(1 for got, _ in _claims(ws) if got == 0)


def _claimed_within(conn: Conn, run: Any, seconds: float) -> float:
    t0 = time.monotonic()
    wait_for(
        lambda: step_status(conn, run.step_id) == "succeeded", seconds, f"the step claimed in {seconds}s"
    )
    return time.monotonic() - t0


def _recipes(conn: Conn) -> list[str]:
    return list(one(conn, "select recipes from pgflight.workers where stopped_at is null limit 1"))


def test_one_idle_process_of_three_claims_each_job(conn: Conn, dsn: str, workers) -> None:
    db.create_workspace(conn, "w")
    ws = _start(workers, dsn, 3, "--concurrency", "2", "--poll", "30")  # no poll: only NOTIFY wakes
    before = _empty(ws)
    jobs = 15
    for i in range(jobs):
        run = db.submit_run(conn, "w", "noop", {"i": i})
        assert _claimed_within(conn, run, 2.0) < 1.0, "picked up by NOTIFY, not the 30 s poll"
        time.sleep(0.1)
    empty = _empty(ws) - before
    # if every NOTIFY woke every process, all three would wake: two empty claims per job (30 here)
    assert empty <= jobs * 0.1, f"{empty} empty claims for {jobs} jobs: {_claims(ws)}"
    pids = set(
        r[0]
        for r in conn.execute(
            "select w.pid from pgflight.step_attempts a join pgflight.workers w on w.id = a.worker_id"
            " where a.recipe = 'noop'"
        ).fetchall()
    )
    assert len(pids) >= 2, "the tickets go to whichever idle process is first, not always the same one"


def test_a_ticket_taken_by_a_frozen_process_is_claimed_by_the_poll(conn: Conn, dsn: str, workers) -> None:
    """
    The worst case of a chosen waiter that never claims: it took the ticket's lock and froze. The
    step is claimed by another process's poll within the poll interval; a plain NOTIFY (an
    any-language sender, empty payload) wakes the workers at once whatever the tickets.
    """
    db.create_workspace(conn, "w")
    _start(workers, dsn, 2, "--concurrency", "2", "--poll", "1")
    tickets = WakeTickets(_recipes(conn))
    with psycopg.connect(dsn, autocommit=True) as frozen:
        for plain in (False, True):
            with conn.transaction():
                xid = one(conn, "select pg_current_xact_id()::text")
                assert frozen.execute(
                    "select pg_try_advisory_lock(pgflight.wake_ticket_key(%s))", [tickets.key(xid)]
                ).fetchone() == (True,)
                run = db.submit_run(conn, "w", "noop", {"plain": plain})
            if plain:
                conn.execute("notify pgflight_ready")
                assert _claimed_within(conn, run, 2.0) < 0.5, "an empty payload wakes every listener"
            else:
                assert _claimed_within(conn, run, 3.0) < 1.0 + 0.8, "the poll (1 s) claims a lost ticket"


def test_sigkilled_workers_lose_no_wake(conn: Conn, dsn: str, workers) -> None:
    db.create_workspace(conn, "w")
    ws = _start(workers, dsn, 3, "--concurrency", "2", "--poll", "30")
    before = _empty(ws[2:])
    for victim in ws[:2]:
        run = db.submit_run(conn, "w", "noop", {})
        _claimed_within(conn, run, 2.0)
        victim.kill()  # SIGKILL while it may hold the ticket it just won: its locks go with its session
        for _ in range(5):
            run = db.submit_run(conn, "w", "noop", {})
            assert _claimed_within(conn, run, 2.0) < 1.0, "the survivors answer every NOTIFY"
    assert _empty(ws[2:]) - before <= 1


def test_a_burst_in_one_transaction_reaches_every_idle_process(conn: Conn, dsn: str, workers) -> None:
    """Six 2-second steps in one transaction (one NOTIFY), three processes of two slots: all start at once."""
    db.create_workspace(conn, "w")
    ws = _start(workers, dsn, 3, "--concurrency", "2", "--poll", "30")
    conn.execute("select pgflight.submit_run('w', 'sleep', '{\"seconds\": 2}') from generate_series(1, 6)")
    wait_for(
        lambda: (
            one(
                conn,
                "select count(*) from pgflight.step_attempts where recipe = 'sleep' and status = 'running'",
            )
            == 6
        ),
        1.5,
        "the six steps running on the three processes (the winner passes the wake on)",
    )
    assert (
        one(conn, "select count(distinct worker_id) from pgflight.step_attempts where recipe = 'sleep'") == 3
    )
    assert sum(1 for w in ws if "claimed 2 of 2" in w.output()) == 3


def test_each_recipe_group_gets_its_own_ticket(conn: Conn, dsn: str, workers) -> None:
    """A process that does not serve the recipe cannot take the only ticket from one that does."""
    db.create_workspace(conn, "w")
    _start(workers, dsn, 2, "--concurrency", "2", "--poll", "30", recipes="pgflight_demo")
    _start(workers, dsn, 1, "--concurrency", "2", "--poll", "30", recipes="pgflight_demo:worker_recipes")
    for _ in range(5):
        run = db.submit_run(conn, "w", "quick", {})  # only the third process serves 'quick'
        assert _claimed_within(conn, run, 2.0) < 1.0


def test_the_plain_channel_carries_a_short_ticket(conn: Conn, dsn: str) -> None:
    """An any-language worker LISTENs pgflight_ready as before: one short payload per transaction."""
    db.create_workspace(conn, "w")
    with psycopg.connect(dsn, autocommit=True) as listener:
        listener.execute("listen pgflight_ready")
        with conn.transaction():
            xid = one(conn, "select pg_current_xact_id()::text")
            for _ in range(3):
                db.submit_run(conn, "w", "noop", {})
        got = [(n.channel, n.payload) for n in listener.notifies(timeout=1.0)]
    assert got == [("pgflight_ready", xid)]


def test_claim_with_ticket_claims_only_for_the_ticket_holder(conn: Conn, dsn: str) -> None:
    """One statement tries the ticket and claims: a lost ticket never runs claim_batch."""
    db.create_workspace(conn, "w")
    run = db.submit_run(conn, "w", "noop", {})
    worker = db.register_worker(conn, "t", recipes=["noop"])
    key = WakeTickets(["noop"]).key("42")
    with psycopg.connect(dsn, autocommit=True) as other:
        other.execute("select pg_advisory_lock(pgflight.wake_ticket_key(%s))", [key])
        assert claim_with_ticket(conn, key, worker, 4, 30, ["noop"]) == (False, [])
        assert step_status(conn, run.step_id) == "queued", "claim_batch did not run"
        other.execute("select pg_advisory_unlock(pgflight.wake_ticket_key(%s))", [key])
    won, claims = claim_with_ticket(conn, key, worker, 4, 30, ["noop"])
    assert won and [c.step_id for c in claims] == [run.step_id]
    assert claim_with_ticket(conn, WakeTickets(["noop"]).key("43"), worker, 4, 30, ["noop"]) == (True, [])
    second = db.submit_run(conn, "w", "noop", {"n": 2})
    won, claims = claim_with_ticket(conn, WakeTickets(["noop"]).key("44"), worker, 4, 30, ["noop"])
    assert won and [c.step_id for c in claims] == [second.step_id]
    conn.execute("select pg_advisory_unlock_all()")
