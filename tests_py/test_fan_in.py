"""
The striped fan-in counter (internals/_fan_in) under real concurrency: C17 shapes at
10,000 children completed by several connections at once (one wake, the parent resumes once, the
counters consistent at every stripe boundary), the last two children racing across stripes,
fail-fast under concurrent completions, a retried child counted on no stripe, and a fan-in left
parked by the previous release finished after the upgrade.

Every racing connection has a statement_timeout and a lock_timeout (conftest `connect`), so a
deadlock or a hang fails the test instead of stalling the suite.
"""

# ruff: noqa: B023  (each lambda runs within its own loop iteration, inside race())

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from core_helpers import (
    ORDERS,
    Claim,
    Conn,
    claim,
    complete,
    complete_batch,
    events,
    fail,
    invariant_violations,
    parked_parent,
    race,
    register,
    run_parallel,
    scalar,
    set_clock,
    setup_engine,
    step,
)
from pgflight import migrate
from plan_support import release_project

ConnectFactory = Callable[..., Conn]


def _workers(connect: ConnectFactory, n: int, timeout_s: float = 30) -> list[tuple[Conn, int]]:
    """n connections on the fake instant T0, each with a worker of its own."""
    out = []
    for i in range(n):
        c = connect(timeout_s)
        set_clock(c, 0)
        out.append((c, register(c, f"fan-{i}")))
    return out


def _drain_until(conn: Conn, worker: int, rng: random.Random, stop_at: int | None) -> int:
    """
    Claim and complete children in batches of random size (1 to 97, some by complete_step one at
    a time) until none is claimable, or until about `stop_at` were completed; return how many.
    """
    done = 0
    while stop_at is None or done < stop_at:
        got = claim(conn, worker, rng.randint(1, 97), 60, ["child"])
        if not got:
            break
        if len(got) <= 3:
            for c in got:
                complete(conn, c)
        else:
            assert complete_batch(conn, got) == ["succeeded"] * len(got)
        done += len(got)
    return done


def _counter(eng: Conn, parent: int) -> dict[str, int]:
    """The parent's counter, its stripes and its children still live, read at one instant."""
    row = eng.execute(
        "select p.children_pending,"
        "       coalesce((select sum(f.allotted) from pgflight.fan_in_stripes f"
        "                  where f.parent_id = p.id and f.pending > 0), 0)::integer,"
        "       coalesce((select sum(f.pending) from pgflight.fan_in_stripes f"
        "                  where f.parent_id = p.id), 0)::integer,"
        "       (select count(*) from pgflight.steps c join pgflight.step_attempts a on a.step_id = c.id"
        "         where c.parent_id = p.id"
        "           and a.status not in ('succeeded', 'dead_letter', 'cancelled'))::integer"
        "  from pgflight.steps p where p.id = %s",
        [parent],
    ).fetchone()
    assert row is not None
    return {"children_pending": row[0], "allotted_not_dry": row[1], "striped_pending": row[2], "live": row[3]}


def test_c17_10000_children_completed_by_6_connections_wake_the_parent_once(
    eng: Conn, connect: ConnectFactory
) -> None:
    """
    C17 at 10,000 children: six connections complete them concurrently in batches of random size
    (1-97, the small ones one by one). Half-way the counters agree: the stripes hold exactly the
    children still live, and the parent's counter is the allotment of the stripes not yet dry.
    At the end the parent left awaiting_children exactly once (one parent_resumed event, its one
    attempt queued again), its counter is zero, its stripes are gone, and the sweep wakes nothing.
    """
    w = register(eng)
    sub, parked = parked_parent(eng, w, 10_000)
    layout = eng.execute(
        "select count(*), sum(allotted) from pgflight.fan_in_stripes where parent_id = %s", [sub.step_id]
    ).fetchone()
    assert layout == (16, 10_000)
    workers = _workers(connect, 6)

    first = run_parallel(
        [
            lambda c=c, wid=wid, i=i: _drain_until(c, wid, random.Random(i), 800)
            for i, (c, wid) in enumerate(workers)
        ]
    )
    assert sum(first) >= 4_800
    half = _counter(eng, sub.step_id)
    assert half["live"] == 10_000 - sum(first)
    assert half["striped_pending"] == half["live"]
    assert half["children_pending"] == half["allotted_not_dry"] >= half["live"]
    assert step(eng, sub.step_id)["status"] == "awaiting_children"

    rest = run_parallel(
        [
            lambda c=c, wid=wid, i=i: _drain_until(c, wid, random.Random(100 + i), None)
            for i, (c, wid) in enumerate(workers)
        ]
    )
    assert sum(first) + sum(rest) == 10_000
    assert len(events(eng, step_id=sub.step_id, reason="parent_resumed")) == 1
    attempts = eng.execute(
        "select id, status from pgflight.step_attempts where step_id = %s", [sub.step_id]
    ).fetchall()
    assert attempts == [(parked.attempt_id, "queued")]
    assert _counter(eng, sub.step_id) == {
        "children_pending": 0,
        "allotted_not_dry": 0,
        "striped_pending": 0,
        "live": 0,
    }
    assert (
        scalar(eng, "select count(*) from pgflight.fan_in_stripes where parent_id = %s", [sub.step_id]) == 0
    )
    for _ in range(10):
        assert scalar(eng, "select pgflight.wake_parents()") == 0
    assert len(events(eng, step_id=sub.step_id, reason="parent_resumed")) == 1


def _last_two(eng: Conn, w: int, n: int) -> tuple[int, Claim, Claim]:
    """A parked parent of n children, all but two completed; returns (parent step, the last two claims)."""
    sub, _ = parked_parent(eng, w, n)
    held: list[Claim] = []
    while got := claim(eng, w, 500, 60, ["child"]):
        held += got
    assert len(held) == n
    for lo in range(0, n - 2, 500):
        chunk = held[lo : min(lo + 500, n - 2)]
        assert complete_batch(eng, chunk) == ["succeeded"] * len(chunk)
    return sub.step_id, held[-2], held[-1]


@pytest.mark.parametrize("n", [10_000, 300])
def test_c17_last_two_of_a_striped_fan_in_wake_the_parent_once(
    eng: Conn, connect: ConnectFactory, n: int
) -> None:
    """
    C17 on stripes: the last two children complete in two sessions, one holding its transaction
    open before COMMIT while the other runs (both orders), or at the same instant; wherever the
    two find what is left of the count (one stripe or two), the parent wakes exactly once.
    """
    a, b = (c for c, _ in _workers(connect, 2, 10))
    w = register(eng)
    rounds = 3 if n == 10_000 else 30
    for i in range(rounds):
        parent, x, y = _last_two(eng, w, n)
        ra, rb, _ = race(
            lambda: complete(a, x), a, lambda: complete(b, y), b, order=ORDERS[i % 3], observer=eng
        )
        assert ra.error is None and rb.error is None, (ra, rb)
        assert len(events(eng, step_id=parent, reason="parent_resumed")) == 1
        assert step(eng, parent)["status"] == "queued"
        assert _counter(eng, parent)["children_pending"] == 0
    assert scalar(eng, "select pgflight.wake_parents()") == 0


def test_fail_fast_under_concurrent_completions_dead_letters_the_parent_once(
    eng: Conn, connect: ConnectFactory
) -> None:
    """
    A fail-fast parent of 3,000 children: four connections complete children concurrently while a
    fifth fails one for good. The parent is dead-lettered exactly once (reason child_failed), never
    woken; every sibling ended (succeeded before the failure, else cancelled, or cancel_requested
    when it was leased at that moment); its counter and stripes are gone; no completion
    deadlocked or timed out.
    """
    w = register(eng)
    sub, _ = parked_parent(eng, w, 3_000, fail_fast=True)
    workers = _workers(connect, 5)
    failer, fw = workers[4]

    def fail_one() -> int:
        got = claim(failer, fw, 1, 60, ["child"])
        fail(failer, got[0], {"message": "bad child"}, retryable=False)
        return 1

    def drain(c: Conn, wid: int, seed: int) -> int:
        rng, done = random.Random(seed), 0
        while True:
            got = claim(c, wid, rng.randint(5, 60), 60, ["child"])
            if not got:
                return done
            outcomes = complete_batch(c, got)
            assert set(outcomes) <= {"succeeded", "cancelled"}, outcomes
            done += outcomes.count("succeeded")

    fns: list[Callable[[], Any]] = [
        lambda c=c, wid=wid, i=i: drain(c, wid, i) for i, (c, wid) in enumerate(workers[:4])
    ]
    results = run_parallel([*fns, fail_one])
    assert results[-1] == 1
    parent_ends = eng.execute(
        "select to_status, reason from pgflight.events where step_id = %s"
        " and to_status in ('dead_letter', 'queued') and from_status is not null",
        [sub.step_id],
    ).fetchall()
    assert parent_ends == [("dead_letter", "child_failed")]
    assert step(eng, sub.step_id)["status"] == "dead_letter"
    assert events(eng, step_id=sub.step_id, reason="parent_resumed") == []
    # every sibling ended, or (leased when the parent failed) is told to stop at its next write
    siblings = eng.execute(
        "select distinct a.status from pgflight.steps c join pgflight.step_attempts a on a.step_id = c.id"
        " where c.parent_id = %s",
        [sub.step_id],
    ).fetchall()
    assert {s for (s,) in siblings} <= {"succeeded", "dead_letter", "cancelled", "cancel_requested"}, siblings
    assert _counter(eng, sub.step_id)["children_pending"] == 0
    assert (
        scalar(eng, "select count(*) from pgflight.fan_in_stripes where parent_id = %s", [sub.step_id]) == 0
    )
    assert scalar(eng, "select status from pgflight.runs where id = %s", [sub.run_id]) == "failed"


def test_a_retried_child_counts_off_the_stripes_and_the_parent_wakes_after_the_last(eng: Conn) -> None:
    """
    A child of a 200-child fan-in dead-letters and is retried while the parent waits: the retry
    adds one to the parent's counter, on no stripe. Completed first, it takes its one from a
    stripe that belongs to other children; the parent still waits until the very last child
    ends, then wakes once.
    """
    w = register(eng)
    sub, _ = parked_parent(eng, w, 200)
    (bad,) = claim(eng, w, 1, 60, ["child"])
    fail(eng, bad, {"message": "flaky"}, retryable=False)
    got = claim(eng, w, 500, 60, ["child"])
    assert len(got) == 199
    eng.execute("select pgflight.retry_step(%s, 'ops', 'again')", [bad.step_id])
    (again,) = claim(eng, w, 1, 60, ["child"])
    assert again.step_id == bad.step_id
    complete(eng, again)
    assert complete_batch(eng, got[:-1]) == ["succeeded"] * 198
    assert step(eng, sub.step_id)["status"] == "awaiting_children"
    assert _counter(eng, sub.step_id)["children_pending"] == 1
    complete(eng, got[-1])
    assert step(eng, sub.step_id)["status"] == "queued"
    assert len(events(eng, step_id=sub.step_id, reason="parent_resumed")) == 1


def test_a_fan_in_parked_before_the_upgrade_wakes_once_after_it(
    empty_dsn: str, connect: ConnectFactory, tmp_path: Path
) -> None:
    """
    A parent parked by @v0.3.0 on 400 children (its count on its own row: that release has no
    stripes; pinned, since every later tag has them), 150 of them completed before the upgrade:
    after the upgrade (the plan before the re-baseline to its end, then `pgflight migrate` across
    the re-baseline), three connections complete the rest concurrently, and the parent wakes
    exactly once, after the last.
    """
    old = release_project(tmp_path / "old")
    migrate.deploy(empty_dsn, to="@v0.3.0", root=old)
    with psycopg.connect(empty_dsn, autocommit=True) as c:
        setup_engine(c)
        w = register(c)
        sub, _ = parked_parent(c, w, 400)
        got = claim(c, w, 150, 60, ["child"])
        assert complete_batch(c, got) == ["succeeded"] * 150
        migrate.deploy(empty_dsn, root=old)
        migrate.upgrade(empty_dsn)
        assert scalar(c, "select count(*) from pgflight.fan_in_stripes") == 0
        assert step(c, sub.step_id)["status"] == "awaiting_children"
        conns = []
        for i in range(3):
            k = connect(30, dsn_=empty_dsn)
            conns.append((k, register(k, f"after-{i}")))
        done = run_parallel(
            [
                lambda k=k, wid=wid, i=i: _drain_until(k, wid, random.Random(i), None)
                for i, (k, wid) in enumerate(conns)
            ]
        )
        assert sum(done) == 250
        assert len(events(c, step_id=sub.step_id, reason="parent_resumed")) == 1
        assert step(c, sub.step_id)["status"] == "queued"
        assert invariant_violations(c) == {}
