"""
claim_batch's hot path.

The fast path: a call with one ready lane and nothing in play (no cap, rate
limit, pause, recipe limit or concurrency key) leases its candidates itself, without the fair
claim's layers; every other call goes through the fair claim as before, and gets its answer.

Which path a call took is read from the function statistics of its own transaction
(`pg_stat_xact_user_functions`, track_functions = pl): `_claim_fair` is called or it is not.

The reclaim inside a claim runs at most once a second per session, and nothing a session stores
stops it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from core_helpers import (
    WORKSPACE,
    Conn,
    at,
    claim,
    register,
    rows,
    run_parallel,
    scalar,
    set_clock,
    sqlstate,
    submit,
    submit_many,
)
from security_support import grant, login_connect


def _claimed(conn: Conn, worker_id: int, n: int, recipes: list[str] | None = None) -> tuple[list[int], bool]:
    """Claim n in one transaction: (the attempt ids, whether the fair claim was entered)."""
    conn.execute("set track_functions = 'pl'")
    with conn.transaction():
        got = [c.attempt_id for c in claim(conn, worker_id, n, 30, recipes)]
        fair = scalar(
            conn,
            "select coalesce(sum(calls), 0) from pg_stat_xact_user_functions"
            " where schemaname = 'pgflight' and funcname = '_claim_fair'",
        )
    return got, int(fair) > 0


def _queued(conn: Conn, recipe: str | None = None) -> list[int]:
    """The queued attempt ids in claim order."""
    return [
        r["id"]
        for r in rows(
            conn,
            "select id from pgflight.step_attempts"
            " where status = 'queued' and (%s::text is null or recipe = %s)"
            " order by priority desc, available_after, id",
            [recipe, recipe],
        )
    ]


def test_one_lane_with_nothing_in_play_is_claimed_in_claim_order_without_the_fair_claim(eng: Conn) -> None:
    w = register(eng)
    submit_many(eng, 6, "a")
    submit_many(eng, 3, "a", priority=5)
    submit(eng, "a", delay_s=60)  # not due: never claimed
    order = _queued(eng)
    got, fair = _claimed(eng, w, 5)
    assert not fair
    assert sorted(got) == sorted(order[:5])  # the highest priority first, then the oldest
    got, fair = _claimed(eng, w, 10, ["a", "b"])
    assert not fair
    assert sorted(got) == sorted(order[5:9])
    assert _claimed(eng, w, 10) == ([], False)  # nothing due: an empty claim, still no fair claim


def _second_workspace(conn: Conn) -> None:
    conn.execute("select pgflight.create_workspace('other')")
    submit(conn, "a", workspace="other")


def _second_recipe(conn: Conn) -> None:
    submit(conn, "b")


def _ws_cap(conn: Conn) -> None:
    conn.execute("select pgflight.set_workspace_limits(%s, %s)", [WORKSPACE, Jsonb({"max_in_flight": 2})])


def _ws_rate(conn: Conn) -> None:
    conn.execute("select pgflight.set_workspace_limits(%s, %s)", [WORKSPACE, Jsonb({"starts_per_s": 2})])


def _ws_paused(conn: Conn) -> None:
    conn.execute("select pgflight.pause_workspace(%s, 'maintenance')", [WORKSPACE])


def _global_cap(conn: Conn) -> None:
    conn.execute("select pgflight.set_global_limits(%s)", [Jsonb({"max_in_flight": 3})])


def _recipe_paused(conn: Conn) -> None:
    conn.execute("select pgflight.pause_recipe('b', 'outage')")


def _keyed(conn: Conn) -> None:
    for _ in range(3):
        submit(conn, "a", priority=9, concurrency_key="k", concurrency_limit=1)


# what is in play, and how many of the 4 queued 'a' steps (plus what the setup adds) claim_batch(10)
# then gives
CASES: list[tuple[str, Callable[[Conn], Any], int]] = [
    ("a second workspace with work", _second_workspace, 5),
    ("a second recipe with work", _second_recipe, 5),
    ("a workspace cap of 2", _ws_cap, 2),
    ("a workspace rate of 2 starts/s (bucket starts full at its burst)", _ws_rate, 2),
    ("a paused workspace", _ws_paused, 0),
    ("a global cap of 3", _global_cap, 3),
    ("a paused recipe elsewhere", _recipe_paused, 4),
    ("three candidates under one key of limit 1", _keyed, 5),
]


@pytest.mark.parametrize(("setup", "expected"), [(c[1], c[2]) for c in CASES], ids=[c[0] for c in CASES])
def test_anything_in_play_goes_through_the_fair_claim_and_is_honoured(
    eng: Conn, setup: Callable[[Conn], Any], expected: int
) -> None:
    w = register(eng)
    submit_many(eng, 4, "a")
    setup(eng)
    got, fair = _claimed(eng, w, 10, ["a", "b"])
    assert fair
    assert len(got) == expected
    keyed = scalar(
        eng,
        "select count(*) from pgflight.step_attempts where concurrency_key = 'k' and status = 'claimed'",
    )
    assert keyed <= 1


def test_a_login_outside_the_workspace_claims_nothing_on_the_fast_path(
    eng: Conn, logins: Any, dsn: str
) -> None:
    """The lane's workspace must be in the login's worker lane: the fast path never widens it."""
    eng.execute("select pgflight.create_workspace('fast-mine')")
    submit_many(eng, 3, "a")  # in the test workspace, which the login below may not work in
    grant(eng, "pgf_worker_a", "fast-mine", "worker")
    with login_connect(logins.dsn("pgf_worker_a", dsn)) as other:
        w = register(other)
        assert claim(other, w, 10, 30) == []
        assert claim(other, w, 10, 30, ["a"]) == []
    assert len(_queued(eng)) == 3


def _status(conn: Conn, attempt_id: int) -> str:
    return str(scalar(conn, "select status from pgflight.step_attempts where id = %s", [attempt_id]))


def test_a_claim_reclaims_lapsed_leases_at_most_once_a_second_per_session(eng: Conn) -> None:
    """The reclaim inside claim_batch reads every live lease: a session runs it at most once a second."""
    w = register(eng)
    submit_many(eng, 2, "a")
    first = claim(eng, w, 1, 0.5)[0]  # this claim ran the reclaim, at T0
    set_clock(eng, 0.9)  # the lease lapsed at 0.5
    claim(eng, w, 1, 30)
    assert _status(eng, first.attempt_id) == "claimed"  # not reclaimed yet: within the second
    set_clock(eng, 1.2)
    claim(eng, w, 1, 30)
    assert _status(eng, first.attempt_id) == "lease_expired"  # reclaimed by the first claim after it


def test_a_claim_reclaims_whatever_its_session_stored_as_the_last_reclaim(eng: Conn) -> None:
    """A value the session put there itself, or a clock moved back, never stops the reclaim or the claim."""
    w = register(eng)
    submit_many(eng, 10, "a")
    # (the last: a time far ahead of the clock, as when the clock was moved back)
    for stored, moved_to in [("not a time", 10), ("1e400", 20), ("", 30), ("99999999999", 40)]:
        lapsed = claim(eng, w, 1, 0.5)[0]
        set_clock(eng, moved_to)
        eng.execute("select set_config('pgflight.claim_reclaim_at', %s, false)", [stored])
        claim(eng, w, 1, 30)
        assert _status(eng, lapsed.attempt_id) == "lease_expired", stored


def _lapsed(conn: Conn) -> int:
    return int(scalar(conn, "select count(*) from pgflight.step_attempts where status = 'lease_expired'"))


def test_a_crash_is_drained_by_every_claim_while_a_full_batch_lapsed(eng: Conn) -> None:
    """
    C06/C44 (a worker crash, the sweeper gone): the throttle must not cut recovery to
    reclaim_in_claim leases a second per session. A reclaim that took its full limit leaves more
    lapsed leases behind: the next claim reclaims again, as before the throttle.
    """
    eng.execute("update pgflight.settings set reclaim_in_claim = 2")
    w = register(eng)
    submit_many(eng, 10, "a")
    assert len(claim(eng, w, 6, 0.5)) == 6  # the crashed worker's batch; this claim ran the reclaim
    for t in (1.5, 1.6, 1.7):  # every lease lapsed at 0.5; three claims within one second
        set_clock(eng, t)
        claim(eng, w, 1, 30)
    assert _lapsed(eng) == 6
    set_clock(eng, 1.75)
    claim(eng, w, 1, 30)  # finds nothing lapsed: the throttle holds again from here
    eng.execute("update pgflight.step_attempts set lease_expires_at = %s where status = 'claimed'", [at(1.8)])
    set_clock(eng, 1.9)
    claim(eng, w, 1, 30)
    assert _lapsed(eng) == 6  # within the second of the last reclaim, which found less than its limit
    set_clock(eng, 2.8)
    claim(eng, w, 1, 30)
    assert _lapsed(eng) == 8


def test_a_rolled_back_claim_does_not_count_as_a_reclaim(eng: Conn) -> None:
    """The stored time rolls back with the claim's transaction (and its reclaim)."""
    w = register(eng)
    submit_many(eng, 3, "a")
    first = claim(eng, w, 1, 0.5)[0]
    set_clock(eng, 2)
    with pytest.raises(psycopg.errors.Error), eng.transaction():
        claim(eng, w, 1, 30)  # reclaims first, then rolled back with the reclaim
        assert _status(eng, first.attempt_id) == "lease_expired"
        eng.execute("select 1 / 0")
    assert _status(eng, first.attempt_id) == "claimed"
    with eng.transaction(), pytest.raises(psycopg.errors.Error), eng.transaction():  # a savepoint
        claim(eng, w, 1, 30)
        eng.execute("select 1 / 0")
    set_clock(eng, 2.5)
    claim(eng, w, 1, 30)
    assert _status(eng, first.attempt_id) == "lease_expired"


def test_fast_and_fair_claimers_racing_lease_every_row_once(eng: Conn, connect: Any) -> None:
    """Claimers on the fast path (one lane) and on the fair path (two recipe lanes) at once."""
    submit_many(eng, 150, "a")
    submit_many(eng, 150, "b")
    submit_many(eng, 20, "a", priority=3)
    conns = [connect(30) for _ in range(4)]
    workers = []
    for c in conns:
        set_clock(c, 1)
        workers.append(register(c))

    def loop(i: int) -> list[int]:
        c, w = conns[i], workers[i]
        recipes = [None, ["a", "b"], None, ["b", "a", "b", None]][i]  # type: ignore[list-item]
        got: list[int] = []
        empty = 0
        while empty < 3:
            batch = [x.attempt_id for x in claim(c, w, 7, 30, recipes)]
            got += batch
            empty = 0 if batch else empty + 1
        return got

    results = run_parallel([lambda i=i: loop(i) for i in range(4)])
    everything = [a for r in results for a in r]
    assert len(everything) == len(set(everything)) == 320
    assert scalar(eng, "select count(*) from pgflight.step_attempts where status = 'queued'") == 0
    assert (
        scalar(
            eng, "select count(distinct fencing_token) from pgflight.step_attempts where status = 'claimed'"
        )
        == 320
    )


def test_the_throttle_holds_whatever_the_sessions_extra_float_digits(eng: Conn) -> None:
    """The stored time is exact: a session's extra_float_digits (-10: '1.8935e+09') does not round it."""
    w = register(eng)
    submit_many(eng, 3, "a")
    eng.execute("set extra_float_digits = -10")
    first = claim(eng, w, 1, 0.5)[0]  # the reclaim ran at T0
    set_clock(eng, 0.9)
    claim(eng, w, 1, 30)
    assert _status(eng, first.attempt_id) == "claimed"  # within the second: not reclaimed yet
    set_clock(eng, 1.2)
    claim(eng, w, 1, 30)
    assert _status(eng, first.attempt_id) == "lease_expired"


def test_a_claim_renews_the_workers_last_sighting_at_most_once_a_second(eng: Conn) -> None:
    """
    A claim used to write the worker's row every time. It renews last_seen_at only when the last
    sighting is a second old or more (or ahead of the clock: a clock moved back); worker_list and
    metrics_snapshot count a worker alive for 60 s after it.
    """
    set_clock(eng, 0)
    w = register(eng)
    submit_many(eng, 6, "a")

    def seen() -> tuple[Any, str]:
        r = rows(eng, "select last_seen_at, xmin::text as x from pgflight.workers where id = %s", [w])[0]
        return r["last_seen_at"], r["x"]

    _, x0 = seen()
    set_clock(eng, 0.5)
    assert len(claim(eng, w, 1, 30)) == 1
    assert seen() == (at(0), x0)  # within the second: the row is not written
    set_clock(eng, 1.0)
    claim(eng, w, 1, 30)
    renewed, x1 = seen()
    assert renewed == at(1.0) and x1 != x0
    set_clock(eng, 1.9)
    claim(eng, w, 1, 30)
    assert seen() == (at(1.0), x1)
    set_clock(eng, 0.2)  # the clock moved back
    claim(eng, w, 1, 30)
    assert seen()[0] == at(0.2)
    set_clock(eng, 50)  # 49.8 s without a renewal: still alive
    assert scalar(eng, "select alive from pgflight.worker_list() where worker_id = %s", [w]) is True
    eng.execute("select pgflight.deregister_worker(%s)", [w])
    assert sqlstate(lambda: claim(eng, w, 1, 30)) == "ZF010"


def _lease_of(conn: Conn, attempt_id: int) -> dict[str, Any]:
    """What a lease wrote on the attempt, as durations from its claim, and its events rows."""
    return rows(
        conn,
        "select a.status, a.slots, a.lease_s, a.lease_expires_at - a.claimed_at as lease,"
        " a.deadline_at - a.claimed_at as deadline, a.started_at = a.claimed_at as started,"
        " a.claim_event_id is not null as claim_event, a.fencing_token is not null as token,"
        " (select count(*) from pgflight.events e"
        "   where e.attempt_id = a.id and e.reason = 'claimed') as events,"
        " (select array_agg(v.to_status order by v.at) from pgflight.run_events v"
        "   where v.attempt_id = a.id) as run_events"
        " from pgflight.step_attempts a where a.id = %s",
        [attempt_id],
    )[0]


@pytest.mark.parametrize("start", [False, True], ids=["claimed", "started"])
def test_the_fast_paths_lease_is_the_fair_claims_lease(eng: Conn, start: bool) -> None:
    """
    Parity of the two paths' leases: the same step leased on the fast path or through the fair
    claim gets the same lease, deadline, slots, status and events, with the step's own lease_s,
    clamped to the limit, or the call's.
    """
    w = register(eng)
    options: list[dict[str, Any]] = [{"lease_s": 5, "max_runtime_s": 7}, {}]
    got: dict[bool, list[dict[str, Any]]] = {}
    for fair in (False, True):
        for o in options:
            submit(eng, "p", **o)
        # a step stored before the options were checked: its lease is clamped to 7 days
        eng.execute(
            "update pgflight.steps set lease_s = 1e13 where id = (select max(id) from pgflight.steps)"
        )
        if fair:
            submit(eng, "q")  # a second lane: the fair claim
        eng.execute("set track_functions = 'pl'")
        with eng.transaction():
            claims = rows(
                eng,
                "select * from pgflight.claim_batch(%s, 10, 30, array['p', 'q'], %s)",
                [w, Jsonb({"start": start})],
            )
            via_fair = scalar(
                eng,
                "select coalesce(sum(calls), 0) from pg_stat_xact_user_functions"
                " where schemaname = 'pgflight' and funcname = '_claim_fair'",
            )
        assert (int(via_fair) > 0) is fair
        claims = [c for c in claims if c["recipe"] == "p"]
        assert len(claims) == 2
        got[fair] = [_lease_of(eng, c["attempt_id"]) for c in sorted(claims, key=lambda c: c["attempt_id"])]
    assert got[False] == got[True]
    assert [g["lease_s"] for g in got[False]] == [5, 604800]
