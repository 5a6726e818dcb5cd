"""
Sweep passes that always make progress and end (internals/_reclaim, _reclaim_picked and
_reclaim_rows): rows whose fail-fast cascade cannot take its locks now do not count against the
pass's limit, so they never crowd out other lapsed leases; a fail-fast cascade runs once per
family, not once per sibling; a transient error (a deadlock) leaves the row for the next pass
instead of dead-lettering it; a reclaimed attempt's error shows no fencing token.

Timing figures (how long each pass takes) are in bench/sweep_cascade_bench.py, not asserted here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from psycopg.types.json import Jsonb

from core_helpers import (
    Conn,
    Outcome,
    _call,
    backend_pid,
    claim,
    register,
    scalar,
    set_clock,
    submit,
)

ConnectFactory = Callable[..., Conn]


def fail_fast_family(
    eng: Conn, worker: int, n: int, recipe: str = "kid", lease_s: float = 60
) -> tuple[int, int]:
    """A fail-fast parent of n children (max_attempts 1), all claimed; (parent step, parent attempt)."""
    sub = submit(eng, "mom", max_attempts=1)
    (p,) = claim(eng, worker, 1, 60, ["mom"])
    kids = [
        {"key": f"k{i:05d}", "recipe": recipe, "input": {}, "options": {"max_attempts": 1}} for i in range(n)
    ]
    eng.execute(
        "select * from pgflight.spawn_children(%s, %s, %s, %s)",
        [p.attempt_id, p.token, Jsonb(kids), Jsonb({"fail_fast": True})],
    )
    got = 0
    while got < n:
        got += len(claim(eng, worker, 1000, lease_s, [recipe]))
    return sub.step_id, p.attempt_id


def lapsed(conn: Conn, step_parent: int | None = None) -> int:
    return int(
        scalar(
            conn,
            "select count(*) from pgflight.step_attempts a join pgflight.steps s on s.id = a.step_id"
            " where a.status in ('claimed', 'running', 'cancel_requested')"
            "   and (%(p)s::bigint is null or s.parent_id = %(p)s)",
            {"p": step_parent},  # type: ignore[arg-type]
        )
    )


def test_a_blocked_3000_child_cascade_leaves_room_for_other_workspaces_and_resolves_after_release(
    eng: Conn, connect: ConnectFactory
) -> None:
    """
    3,000 children of one fail-fast parent lapse together while an open transaction holds one
    sibling's attempt FOR SHARE; another workspace has a lapsed lease too (behind them in the
    reclaim's order). The first run_sweeps pass ends (within its statement_timeout) and reclaims
    the other workspace's lease; no child is dead-lettered by the engine. Once the share lock is
    released the family resolves within four passes: the parent dead-lettered once, every child
    ended.
    """
    w = register(eng)
    parent_step, parent_attempt = fail_fast_family(eng, w, 3000)
    eng.execute("select pgflight.create_workspace('other')")
    other = submit(eng, "solo", workspace="other", max_attempts=3)
    (oc,) = claim(eng, w, 1, 60, ["solo"])
    held = int(
        scalar(
            eng,
            "select max(a.id) from pgflight.step_attempts a join pgflight.steps s on s.id = a.step_id"
            " where s.parent_id = %s",
            [parent_step],
        )
    )
    holder = connect(60)
    holder.execute("begin")
    holder.execute("select 1 from pgflight.step_attempts where id = %s for share", [held])
    sweeper = connect(60)
    set_clock(sweeper, 120)

    first = dict(sweeper.execute("select * from pgflight.run_sweeps()").fetchall())
    assert first["reclaim_expired"] >= 1
    assert (
        scalar(eng, "select status from pgflight.step_attempts where id = %s", [oc.attempt_id])
        == "lease_expired"
    )
    assert other.run_id
    assert scalar(eng, "select count(*) from pgflight.step_attempts where reason = 'engine_error'") == 0
    assert (
        scalar(eng, "select status from pgflight.step_attempts where id = %s", [parent_attempt])
        == "awaiting_children"
    )

    holder.execute("rollback")
    passes = 0
    while lapsed(eng, parent_step) and passes < 10:
        sweeper.execute("select * from pgflight.run_sweeps()")
        passes += 1
    assert lapsed(eng, parent_step) == 0
    assert passes <= 4, passes
    assert (
        scalar(eng, "select status from pgflight.step_attempts where id = %s", [parent_attempt])
        == "dead_letter"
    )
    assert (
        scalar(
            eng,
            "select count(*) from pgflight.events where step_id = %s and to_status = 'dead_letter'",
            [parent_step],
        )
        == 1
    )
    ended = dict(
        eng.execute(
            "select a.status, count(*) from pgflight.step_attempts a"
            " join pgflight.steps s on s.id = a.step_id where s.parent_id = %s group by a.status",
            [parent_step],
        ).fetchall()
    )
    assert set(ended) <= {"dead_letter", "cancelled"}, ended
    assert sum(ended.values()) == 3000
    assert scalar(eng, "select count(*) from pgflight.step_attempts where reason = 'engine_error'") == 0


def test_a_fan_out_larger_than_the_pass_limit_resolves_in_a_bounded_number_of_passes(
    eng: Conn, connect: ConnectFactory
) -> None:
    """
    2,500 children of a fail-fast parent lapse together; reclaim_expired(500) is called until
    nothing is lapsed: the first call's cascade runs once for the family, and the whole fan-out
    ends within six calls (the 2,500 rows over a limit of 500), each call ending at least one row.
    """
    w = register(eng)
    parent_step, parent_attempt = fail_fast_family(eng, w, 2500)
    sweeper = connect(60)
    set_clock(sweeper, 120)
    counts: list[int] = []
    while lapsed(eng, parent_step) and len(counts) < 20:
        counts.append(int(scalar(sweeper, "select pgflight.reclaim_expired(500)")))
    assert lapsed(eng, parent_step) == 0
    assert len(counts) <= 6, counts
    assert min(counts) >= 1, counts
    assert (
        scalar(eng, "select status from pgflight.step_attempts where id = %s", [parent_attempt])
        == "dead_letter"
    )


def test_a_deadlock_in_the_reclaim_leaves_the_row_for_the_next_pass(
    eng: Conn, connect: ConnectFactory
) -> None:
    """
    A lapsed child of a fail-fast parent at its ceiling (it is reclaimed row by row). T holds the
    parent's steps row; the reclaim waits for it (its dead letter pokes the parent); T then asks
    for the child's steps row, which the reclaim holds: a deadlock that the sweeper's detector
    (deadlock_timeout 100 ms, T's 10 s) ends in the sweeper (40P01). The child is left as it was,
    not dead-lettered with reason engine_error; after T ends, the next pass dead-letters it as a
    lapsed lease and the parent with it.
    """
    w = register(eng)
    parent_step, parent_attempt = fail_fast_family(eng, w, 2)
    child_attempt = int(
        scalar(
            eng,
            "select min(a.id) from pgflight.step_attempts a join pgflight.steps s"
            " on s.id = a.step_id where s.parent_id = %s",
            [parent_step],
        )
    )
    child_step = int(scalar(eng, "select step_id from pgflight.step_attempts where id = %s", [child_attempt]))
    t = connect(20)
    t.execute("set deadlock_timeout = '10s'")
    sweeper = connect(20)
    sweeper.execute("set deadlock_timeout = '100ms'")
    set_clock(sweeper, 120)
    t.execute("begin")
    t.execute("select 1 from pgflight.steps where id = %s for update", [parent_step])
    with ThreadPoolExecutor(max_workers=2) as pool:
        fs = pool.submit(_call, lambda: scalar(sweeper, "select pgflight.reclaim_expired(1)"))
        deadline = time.monotonic() + 10
        while scalar(eng, "select pg_blocking_pids(%s)", [backend_pid(sweeper)]) != [backend_pid(t)]:
            assert time.monotonic() < deadline and not fs.done(), "the reclaim did not wait for T"
            time.sleep(0.005)
        ft = pool.submit(
            _call, lambda: t.execute("select 1 from pgflight.steps where id = %s for update", [child_step])
        )
        out_s = fs.result(timeout=20)
        out_t = ft.result(timeout=20)
        t.execute("rollback")
    assert out_s.error is None and out_t == Outcome(value=out_t.value), (out_s, out_t)
    row = eng.execute(
        "select status, reason from pgflight.step_attempts where id = %s", [child_attempt]
    ).fetchone()
    assert row == ("claimed", None), row
    assert scalar(sweeper, "select pgflight.reclaim_expired(10)") >= 1
    row = eng.execute(
        "select status, reason from pgflight.step_attempts where id = %s", [child_attempt]
    ).fetchone()
    assert row is not None and row[0] == "dead_letter" and row[1] != "engine_error", row
    assert (
        scalar(eng, "select status from pgflight.step_attempts where id = %s", [parent_attempt])
        == "dead_letter"
    )


def test_a_reclaimed_attempt_error_holds_no_fencing_token(eng: Conn, connect: ConnectFactory) -> None:
    """
    A lapsed lease, reclaimed (a retry) and a lapsed lease at the ceiling (a dead letter): neither
    attempt's error, as readers see it, holds the fencing token (a credential of the lease).
    """
    w = register(eng)
    submit(eng, "retry_me", max_attempts=3)
    submit(eng, "end_me", max_attempts=1)
    (a,) = claim(eng, w, 1, 60, ["retry_me"])
    (b,) = claim(eng, w, 1, 60, ["end_me"])
    sweeper = connect(20)
    set_clock(sweeper, 120)
    assert scalar(sweeper, "select pgflight.reclaim_expired(10)") == 2
    for c in (a, b):
        error = scalar(eng, "select error from pgflight.step_attempts where id = %s", [c.attempt_id])
        assert error["message"].startswith("lease expired"), error
        assert "fencing_token" not in error and c.token not in error.values(), error
