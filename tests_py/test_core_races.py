"""
Races of the SQL engine on several real connections (invariants 1-3 and 7 of docs/state_machine.md):
concurrent claimers, heartbeat vs reclaim, complete vs reclaim, cancel vs claim / heartbeat /
complete (C26), claim vs reclaim on one expired attempt (C10).

Each race runs in three orders (core_helpers.race): both calls released by one barrier; A holding
its transaction open while B is seen waiting on A's lock (or finishing at once on a SKIP LOCKED
path); and the mirror image. Every connection has a statement_timeout and a lock_timeout, so a
deadlock or a hang fails the test instead of stalling the suite.
"""

# ruff: noqa: B023  (each lambda runs within its own loop iteration, inside race())

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from core_helpers import (
    ORDERS,
    Claim,
    Conn,
    Outcome,
    at,
    attempt,
    cancel_run,
    claim,
    claim_one,
    complete,
    complete_batch,
    events,
    heartbeat,
    invariant_violations,
    race,
    reasons,
    reclaim,
    register,
    rows,
    run_parallel,
    set_clock,
    setup_engine,
    sqlstate,
    submit,
    submit_many,
)

ConnectFactory = Callable[..., Conn]
ITERATIONS = 210  # per race kind; the orders rotate, so each order runs 70 times


@pytest.fixture
def trio(conn: Conn, connect: ConnectFactory) -> tuple[Conn, Conn, Conn]:
    """Two racing connections and an observer, all on one fake instant, with a workspace."""
    setup_engine(conn)
    a, b = connect(10), connect(10)
    return a, b, conn


def test_8_connections_claim_20000_steps_exactly_once(conn: Conn, connect: ConnectFactory) -> None:
    """Invariant 1: 8 concurrent claimers never share an attempt, and together claim all 20,000."""
    setup_engine(conn)
    submit_many(conn, 20_000)
    batch = 50

    def claimer(i: int) -> list[tuple[int, int, int]]:
        c = connect(30)
        w = register(c, f"claimer-{i}")
        got: list[tuple[int, int, int]] = []
        while True:
            claims = claim(c, w, batch, 60)
            assert len(claims) <= batch
            if not claims:
                return got
            got.extend((x.attempt_id, x.token, w) for x in claims)

    per_worker = run_parallel([lambda i=i: claimer(i) for i in range(8)])
    claimed = list(itertools.chain.from_iterable(per_worker))
    ids = [a for a, _, _ in claimed]
    assert len(ids) == 20_000
    assert len(set(ids)) == 20_000, "an attempt was handed to two claimers"
    assert len({t for _, t, _ in claimed}) == 20_000, "a fencing token was handed out twice"
    assert all(len(p) > 0 for p in per_worker), [len(p) for p in per_worker]
    per_attempt = Counter(
        a
        for (a,) in conn.execute(
            "select attempt_id from pgflight.run_events where reason = 'claimed'"
        ).fetchall()
    )
    assert len(per_attempt) == 20_000 and set(per_attempt.values()) == {1}, (
        "not exactly one claimed event per attempt"
    )
    # the stored owner is the claimer that got it
    owners = dict(conn.execute("select id, worker_id from pgflight.step_attempts").fetchall())
    assert all(owners[a] == w for a, _, w in claimed)
    assert claim(conn, register(conn, "late"), 10) == []


def _expired_lease(trio: tuple[Conn, Conn, Conn], i: int, recipe: str) -> tuple[int, Claim]:
    """A running attempt (lease 10 s) claimed at 1000*i s; every connection is moved to 1000*i + 11 s."""
    obs = trio[2]
    base = 1000.0 * i
    for c in trio:
        set_clock(c, base)
    w = register(obs)
    submit(obs, recipe)
    held = claim_one(obs, w, 10, [recipe])
    for c in trio:
        set_clock(c, base + 11)
    return w, held


def _orders() -> itertools.cycle[str]:
    return itertools.cycle(ORDERS)


def test_heartbeat_vs_reclaim_never_both(trio: tuple[Conn, Conn, Conn]) -> None:
    """
    Invariant 3 against the sweep: a late heartbeat and the reclaim of the same expired lease race.
    Either the heartbeat renews (ok) and the sweep leaves the attempt alone, or the sweep reclaims it
    and the heartbeat says lost. Never both.
    """
    a, b, obs = trio
    seen: Counter[tuple[str, str]] = Counter()
    for i, order in zip(range(ITERATIONS), _orders(), strict=False):
        recipe = f"hb{i}"
        w, held = _expired_lease(trio, i, recipe)
        hb, rc, _ = race(lambda: heartbeat(a, w, [held]), a, lambda: reclaim(b), b, order=order, observer=obs)
        assert hb.error is None and rc.error is None, (order, hb, rc)
        status = hb.value[held.attempt_id]
        expired = "lease_expired" in reasons(obs, held.attempt_id)
        seen[(order, status)] += 1
        if status == "held":
            assert not expired, f"{order}: heartbeat renewed a lease that the sweep reclaimed"
            assert attempt(obs, held.attempt_id)["status"] == "running"
            complete(obs, held)
        else:
            assert status == "lease_lost" and expired, (order, status, reasons(obs, held.attempt_id))
            assert attempt(obs, held.attempt_id)["status"] == "lease_expired"
            cancel_run(obs, held.run_id)
    # the ordered variants are deterministic: the holder wins
    assert seen[("a_then_b", "held")] == ITERATIONS // 3
    assert seen[("b_then_a", "lease_lost")] == ITERATIONS // 3
    assert invariant_violations(obs) == {}


def test_complete_vs_reclaim_exactly_one_wins(trio: tuple[Conn, Conn, Conn]) -> None:
    """
    A completion racing the reclaim of its expired lease: exactly one wins. The loser's write is
    rejected with ZF001 (lease lost) or the sweep skips the row. Never both succeeded and
    lease_expired for one attempt.
    """
    a, b, obs = trio
    seen: Counter[tuple[str, str]] = Counter()
    for i, order in zip(range(ITERATIONS), _orders(), strict=False):
        _, held = _expired_lease(trio, i, f"cr{i}")
        done, rc, _ = race(
            lambda: complete(a, held, {"by": "worker"}), a, lambda: reclaim(b), b, order=order, observer=obs
        )
        assert rc.error is None, rc
        got = reasons(obs, held.attempt_id)
        if done.error is None:
            seen[(order, "completed")] += 1
            assert "lease_expired" not in got, f"{order}: both succeeded and lease_expired: {got}"
            assert attempt(obs, held.attempt_id)["status"] == "succeeded"
        else:
            seen[(order, "reclaimed")] += 1
            assert done.error == "ZF001", done
            assert "succeeded" not in got and got.count("lease_expired") == 1, got
            assert attempt(obs, held.attempt_id)["status"] == "lease_expired"
            assert obs.execute(
                "select pgflight.record_stale_write(%s, %s, 'complete')", [held.attempt_id, held.token]
            ).fetchone() == (True,)
            cancel_run(obs, held.run_id)
    assert seen[("a_then_b", "completed")] == ITERATIONS // 3
    assert seen[("b_then_a", "reclaimed")] == ITERATIONS // 3
    assert invariant_violations(obs) == {}


# --- C26: cancel races claim, heartbeat and complete ----------------------------------------


def _after_cancel_race(obs: Conn, w: int, held: Claim | None, run_id: int) -> list[str]:
    """
    What must hold once cancel_run has landed on a run whose root attempt may be leased: the next
    heartbeat says cancelled, a late completion is rejected with ZF002, release acknowledges, the
    step ends cancelled, and the log never shows succeeded for the attempt. Returns what did not hold.
    """
    problems = []
    if held is not None:
        if (hb := heartbeat(obs, w, [held])[held.attempt_id]) != "cancelled":
            problems.append(f"next heartbeat said {hb}")
        if (code := sqlstate(lambda: complete(obs, held))) != "ZF002":
            problems.append(f"late completion got {code}")
        acked = obs.execute(
            "select status from pgflight.release_step(%s, %s, 'ack')", [held.attempt_id, held.token]
        ).fetchone()
        if acked != ("cancelled",):
            problems.append(f"release answered {acked}")
    st = {
        r["status"]
        for r in rows(obs, "select status from pgflight.step_attempts where run_id = %s", [run_id])
    }
    if st != {"cancelled"}:
        problems.append(f"attempts end {st}")
    if events(obs, run_id=run_id, reason="succeeded"):
        problems.append("a succeeded event in a cancelled run")
    return problems


def _never_succeeded_after_cancelled(obs: Conn) -> None:
    bad = obs.execute(
        "select s.attempt_id from pgflight.run_events s"
        " join pgflight.run_events c on c.attempt_id = s.attempt_id"
        " and c.to_status in ('cancelled', 'cancel_requested') and c.id < s.id where s.reason = 'succeeded'"
    ).fetchall()
    assert bad == [], f"succeeded after cancel for attempts {bad}"


def _cancel_race(
    trio: tuple[Conn, Conn, Conn],
    op: str,
    *,
    claimed: bool,
    judge: Callable[[Outcome, Outcome, Claim | None], tuple[str, Claim | None, list[str]]],
) -> None:
    """
    ITERATIONS rounds of `op` (on connection A) racing cancel_run (on B), the orders rotating.
    `judge(op outcome, cancel outcome, held claim)` names the case and returns the attempt still
    to acknowledge and what went wrong. Problems are gathered over all rounds and reported by
    order, so a failure shows how often and in which interleaving the engine misbehaves.
    """
    a, b, obs = trio
    w = register(obs)
    seen: Counter[tuple[str, str]] = Counter()
    problems: Counter[str] = Counter()
    for i, order in zip(range(ITERATIONS), _orders(), strict=False):
        recipe = f"{op}{i}"
        sub = submit(obs, recipe)
        held = claim_one(obs, w, 30, [recipe]) if claimed else None
        call: Callable[[], Any] = {
            "claim": lambda: claim(a, w, 1, 30, [recipe]),
            "heartbeat": lambda: heartbeat(a, w, [held] if held else []),
            "complete": lambda: complete(a, held, {"ok": 1}) if held else None,
        }[op]
        got, cancelled, _ = race(call, a, lambda: cancel_run(b, sub.run_id), b, order=order, observer=obs)
        if cancelled.error is not None:
            problems[f"{order}: cancel_run raised {cancelled.error}"] += 1
            cancel_run(obs, sub.run_id)
        case, to_ack, wrong = judge(got, cancelled, held)
        seen[(order, case)] += 1
        problems.update(f"{order}/{case}: {p}" for p in wrong)
        if case != "succeeded":
            problems.update(f"{order}/{case}: {p}" for p in _after_cancel_race(obs, w, to_ack, sub.run_id))
    assert not problems, f"C26 {op} vs cancel: {dict(problems)} (cases {dict(seen)})"
    _never_succeeded_after_cancelled(obs)
    assert invariant_violations(obs) == {}


def test_c26_cancel_vs_claim(trio: tuple[Conn, Conn, Conn]) -> None:
    """
    C26: cancel_run racing claim_batch: the claim gets nothing, or a lease that is then cancel_requested.
    """
    obs = trio[2]

    def judge(got: Outcome, cancelled: Outcome, _: Claim | None) -> tuple[str, Claim | None, list[str]]:
        if got.error is not None:
            return "claim_failed", None, [f"claim raised {got.error}"]
        held = got.value[0] if got.value else None
        if held is None:
            return "cancel_first", None, []
        status = attempt(obs, held.attempt_id)["status"]
        return "claim_first", held, [] if status == "cancel_requested" else [f"claimed attempt is {status}"]

    _cancel_race(trio, "claim", claimed=False, judge=judge)


def test_c26_cancel_vs_heartbeat(trio: tuple[Conn, Conn, Conn]) -> None:
    """
    C26: a running attempt's heartbeat racing cancel_run: it renews (ok) and the attempt is then
    cancel_requested, or it says cancelled; never lost (the attempt is still the worker's to acknowledge).
    """
    obs = trio[2]

    def judge(got: Outcome, cancelled: Outcome, held: Claim | None) -> tuple[str, Claim | None, list[str]]:
        assert held is not None
        if got.error is not None:
            return "heartbeat_failed", held, [f"heartbeat raised {got.error}"]
        status = got.value[held.attempt_id]
        wrong = [] if status in ("held", "cancelled") else [f"heartbeat said {status}"]
        if (now := attempt(obs, held.attempt_id)["status"]) != "cancel_requested":
            wrong.append(f"attempt is {now}")
        return status, held, wrong

    _cancel_race(trio, "heartbeat", claimed=True, judge=judge)


def test_c26_cancel_vs_complete(trio: tuple[Conn, Conn, Conn]) -> None:
    """
    C26: complete_step racing cancel_run. The final state is succeeded with the cancel a no-op
    (was_running false), or cancelled with the late completion rejected ZF002 (cancelled).
    """
    obs = trio[2]

    def judge(done: Outcome, cancelled: Outcome, held: Claim | None) -> tuple[str, Claim | None, list[str]]:
        assert held is not None
        final = attempt(obs, held.attempt_id)["status"]
        if done.error is None:
            wrong = [] if final == "succeeded" else [f"completed attempt is {final}"]
            if cancelled.error is None and cancelled.value["was_running"]:
                wrong.append("cancel of a finished run was not a no-op")
            if events(obs, attempt_id=held.attempt_id, reason="cancel_requested"):
                wrong.append("cancel_requested logged on a succeeded attempt")
            return "succeeded", None, wrong
        wrong = [] if done.error == "ZF002" else [f"completion raised {done.error}"]
        return "cancelled", held if final == "cancel_requested" else None, wrong

    _cancel_race(trio, "complete", claimed=True, judge=judge)


# --- C10: claim and reclaim on the same expired attempt -----------------------------------


def _tokens(outcome: Outcome) -> list[Any]:
    assert outcome.error is None, outcome
    return outcome.value if isinstance(outcome.value, list) else []


@pytest.mark.parametrize("rival", ["claim_batch", "reclaim_expired"])
def test_c10_claim_and_reclaim_on_one_expired_attempt(trio: tuple[Conn, Conn, Conn], rival: str) -> None:
    """
    C10: two sessions recover the same expired attempt at once (claim_batch reclaims in-line first).
    The attempt is reclaimed exactly once, exactly one new attempt exists, at most one caller holds
    a token for it (exactly one when both callers claim), and the old token is refused.
    """
    a, b, obs = trio
    for i, order in zip(range(60), _orders(), strict=False):
        recipe = f"c10{i}"
        for c in trio:
            set_clock(c, 1000.0 * i)
        w1, w2 = register(obs, "one"), register(obs, "two")
        submit(obs, recipe, max_attempts=5, backoff={"base_s": 0, "jitter": 0})
        old = claim_one(obs, w1, 10, [recipe])
        for c in trio:
            set_clock(c, at(1000.0 * i + 11))
        other: Callable[[], Any] = (
            (lambda: claim(b, w2, 1, 30, [recipe])) if rival == "claim_batch" else (lambda: reclaim(b))
        )
        first, second, _ = race(lambda: claim(a, w1, 1, 30, [recipe]), a, other, b, order=order, observer=obs)
        holders = _tokens(first) + _tokens(second)
        assert reasons(obs, old.attempt_id).count("lease_expired") == 1
        tries = rows(
            obs,
            "select id, status, fencing_token from pgflight.step_attempts"
            " where step_id = %s order by attempt_no",
            [old.step_id],
        )
        assert len(tries) == 2, tries
        if rival == "claim_batch":
            assert len(holders) == 1, f"{order}: {len(holders)} callers got a token"
        else:
            assert len(holders) <= 1
            if not holders:  # the sweep won; the new attempt is claimable exactly once
                holders = claim(obs, w2, 5, 30, [recipe])
                assert len(holders) == 1
        (new,) = holders
        assert new.attempt_id == tries[1]["id"] and new.token > old.token
        assert events(obs, attempt_id=new.attempt_id, reason="claimed").__len__() == 1
        assert heartbeat(obs, w1, [old])[old.attempt_id] == "lease_lost"
        assert sqlstate(lambda: complete(obs, old)) == "ZF001"
        assert complete_batch(obs, [new]) == ["succeeded"]
    assert invariant_violations(obs) == {}
