"""
Failure scenarios of docs/scenarios.md for the SQL engine, one test per scenario, named
after it, on the fake clock wherever time matters.

After every test the engine invariants of core_helpers.INVARIANTS are checked on its database:
no queued attempt at the ceiling, every dead letter with its last error, one live attempt per
step, nothing running or queued under a terminal parent or in a finished run, no attempt that
both succeeded and failed or was cancelled.
"""

# ruff: noqa: B023  (each lambda runs within its own loop iteration, inside race())

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import pytest
from psycopg.types.json import Jsonb

from core_helpers import (
    Claim,
    Conn,
    at,
    attempt,
    attempts_of,
    cancel_run,
    claim,
    claim_one,
    complete,
    complete_batch,
    drain,
    events,
    fail,
    heartbeat,
    one,
    parked_parent,
    race,
    reasons,
    reclaim,
    register,
    release,
    rows,
    run_parallel,
    scalar,
    set_clock,
    spawn,
    sqlstate,
    start_step,
    step,
    submit,
)

ConnectFactory = Callable[..., Conn]


def _pair(connect: ConnectFactory) -> tuple[Conn, Conn]:
    """Two racing connections on the same fake instant as `eng` (T0)."""
    a, b = connect(10), connect(10)
    set_clock(a, 0)
    set_clock(b, 0)
    return a, b


def _ids(events_: list[dict[str, Any]]) -> list[int]:
    return [e["attempt_id"] for e in events_]


# --- C02 ----------------------------------------------------------------------------------


def test_c02_live_worker_declared_dead_is_fenced(eng: Conn) -> None:
    """
    C02: lease 3 s, heartbeats stop for 5 s, the sweep reclaims, worker 2 takes attempt 2; worker 1's late
    result and heartbeat are refused.
    """
    w1, w2 = register(eng, "w1"), register(eng, "w2")
    sub = submit(eng, max_attempts=3)
    first = claim_one(eng, w1, 3)
    set_clock(eng, 5)
    assert reclaim(eng) == 1
    set_clock(eng, 10)  # past the retry backoff (about 1 s)
    second = claim_one(eng, w2, 3)
    assert second.attempt_no == 2 and second.token > first.token

    assert sqlstate(lambda: complete(eng, first, {"by": "w1"})) == "ZF001"
    assert heartbeat(eng, w1, [first]) == {first.attempt_id: "lease_lost"}
    assert eng.execute(
        "select pgflight.record_stale_write(%s, %s, 'complete')", [first.attempt_id, first.token]
    ).fetchone() == (True,)
    complete(eng, second, {"by": "w2"})

    assert [a["status"] for a in attempts_of(eng, sub.step_id)] == ["lease_expired", "succeeded"]
    assert step(eng, sub.step_id)["result"] == {"by": "w2"}
    assert reasons(eng, first.attempt_id) == [
        "queued",
        "claimed",
        "started",
        "lease_expired",
        "stale_result_rejected",
    ]
    assert "succeeded" not in reasons(eng, first.attempt_id)


@pytest.mark.parametrize("completed_at_s", [2.0, 4.0], ids=["within_lease", "after_lease_before_sweep"])
def test_c02_completion_before_the_sweep_wins(eng: Conn, completed_at_s: float) -> None:
    """C02 reverse order: worker 1 completes first, then the sweep runs and finds nothing to do."""
    w1 = register(eng, "w1")
    sub = submit(eng)
    first = claim_one(eng, w1, 3)
    set_clock(eng, completed_at_s)
    complete(eng, first, {"by": "w1"})
    set_clock(eng, 5)
    assert reclaim(eng) == 0
    assert [a["status"] for a in attempts_of(eng, sub.step_id)] == ["succeeded"]
    assert "lease_expired" not in reasons(eng, first.attempt_id)
    assert heartbeat(eng, w1, [first]) == {first.attempt_id: "lease_lost"}


# --- C03 ----------------------------------------------------------------------------------


def test_c03_heartbeats_keep_a_long_step_and_no_heartbeats_lose_it(eng: Conn) -> None:
    """
    C03: lease 5 s, heartbeat every 1.5 s, the step runs 60 s, the sweep runs every second:
    exactly one attempt, no lease_expired event, succeeded. Negative: without heartbeats the same
    step is reclaimed after about 5 s and the late result is fenced.
    """
    w = register(eng)
    kept, dropped = submit(eng, "kept"), submit(eng, "dropped")
    c_kept = claim_one(eng, w, 5, ["kept"])
    c_dropped = claim_one(eng, w, 5, ["dropped"])
    reclaimed_at = None
    for tick in range(1, 121):  # half-second ticks for 60 s
        now = tick * 0.5
        set_clock(eng, now)
        if tick % 3 == 0:
            assert heartbeat(eng, w, [c_kept])[c_kept.attempt_id] == "held"
        if tick % 2 == 0 and reclaim(eng) and reclaimed_at is None:
            reclaimed_at = now
    complete(eng, c_kept, {"done": True})
    assert [a["status"] for a in attempts_of(eng, kept.step_id)] == ["succeeded"]
    assert not events(eng, step_id=kept.step_id, reason="lease_expired")

    assert reclaimed_at is not None and 5 < reclaimed_at <= 6, reclaimed_at
    assert attempts_of(eng, dropped.step_id)[0]["status"] == "lease_expired"
    assert sqlstate(lambda: complete(eng, c_dropped, {"late": True})) == "ZF001"


# --- C05 ----------------------------------------------------------------------------------


def test_c05_each_reclaim_is_a_new_attempt_with_its_metadata_kept(eng: Conn) -> None:
    """C05: three reclaims give 4 attempt rows; each expired row keeps its claim metadata; tokens increase."""
    sub = submit(eng, max_attempts=5)
    claims: list[Claim] = []
    now = 0.0
    for i in range(3):
        claims.append(claim_one(eng, register(eng, f"w{i}"), 10))
        now += 11
        set_clock(eng, now)
        assert reclaim(eng) == 1
        now += 60  # past the backoff
        set_clock(eng, now)
    tries = attempts_of(eng, sub.step_id)
    assert [t["attempt_no"] for t in tries] == [1, 2, 3, 4]
    assert [t["status"] for t in tries] == ["lease_expired"] * 3 + ["queued"]
    for c, t in zip(claims, tries, strict=False):
        assert (t["worker_id"], t["fencing_token"], t["lease_expires_at"]) == (
            attempt(eng, c.attempt_id)["worker_id"],
            c.token,
            c.lease_expires_at,
        )
        assert t["claimed_at"] is not None
        assert _ids(events(eng, attempt_id=c.attempt_id, reason="claimed")) == [c.attempt_id]
        assert _ids(events(eng, attempt_id=c.attempt_id, reason="lease_expired")) == [c.attempt_id]
    tokens = [c.token for c in claims]
    assert tokens == sorted(tokens) and len(set(tokens)) == 3
    assert step(eng, sub.step_id)["failed_attempts"] == 3


# --- C06 ----------------------------------------------------------------------------------


def test_c06_poison_step_dead_letters_at_the_ceiling(eng: Conn) -> None:
    """
    C06: a step whose worker dies every time (lease 2 s, ceiling 3, sweep every second) is dead-lettered
    after exactly 3 claims.
    """
    sub = submit(eng, max_attempts=3)
    now, first_claim, claims = 0.0, None, 0
    while step(eng, sub.step_id)["status"] != "dead_letter":
        assert now < 60, "never dead-lettered"
        set_clock(eng, now)
        got = claim(eng, register(eng, f"w{now}"), 1, 2)  # a fresh (restarted) worker each time
        if got:
            claims += 1
            first_claim = now if first_claim is None else first_claim
        reclaim(eng)
        now += 1
    dead_at = now - 1
    assert claims == 3
    dl = one(eng, "select * from pgflight.dead_letters where step_id = %s", [sub.step_id])
    assert dl["reason"] == "lease_expired" and dl["error"]["message"].startswith("lease expired")
    assert (dead_at - first_claim) < 3 * (2 + 2.4 + 1)  # 3 x (lease + backoff + sweep period)
    set_clock(eng, 3600)
    assert claim(eng, register(eng, "late"), 10, 2) == []
    assert len(events(eng, step_id=sub.step_id, reason="claimed")) == 3


def test_c06_cancel_while_claimed_stops_it_for_good(eng: Conn) -> None:
    """
    C06: cancel while claimed -> cancel_requested; when the lease lapses it becomes cancelled; no new
    attempt.
    """
    w = register(eng)
    sub = submit(eng, max_attempts=3)
    c = claim_one(eng, w, 2)
    assert cancel_run(eng, sub.run_id)["cancel_requested"] == 1
    assert attempt(eng, c.attempt_id)["status"] == "cancel_requested"
    set_clock(eng, 3)
    assert reclaim(eng) == 1
    assert [a["status"] for a in attempts_of(eng, sub.step_id)] == ["cancelled"]
    set_clock(eng, 3600)
    assert claim(eng, w, 10, 2) == []


# --- C07 ----------------------------------------------------------------------------------


def _drive(
    eng: Conn, sub_step: int, end: Callable[[Claim, int], None], rounds: int, t: list[float]
) -> list[str]:
    """Claim the step `rounds` times, ending each attempt with `end`; return the attempt statuses."""
    w = register(eng)
    for i in range(rounds):
        t[0] += 600  # past any backoff
        set_clock(eng, t[0])
        got = claim(eng, w, 1, 10, None)
        if not got:
            break
        assert got[0].step_id == sub_step
        start_step(eng, got[0])
        end(got[0], i)
    return [a["status"] for a in attempts_of(eng, sub_step)]


@pytest.mark.parametrize("path", ["error", "retry_after", "lease_expiry", "mixed"])
def test_c07_every_unsuccessful_path_stops_at_the_ceiling(eng: Conn, path: str) -> None:
    """
    C07: error, retry-after (snooze), lease expiry and a mix of them each dead-letter at the ceiling 3,
    with the last error.
    """
    sub = submit(eng, max_attempts=3)
    t = [0.0]

    def end(c: Claim, i: int) -> None:
        kind = path if path != "mixed" else ("error", "retry_after", "lease_expiry")[i % 3]
        if kind == "error":
            fail(eng, c, {"message": f"error {i}"})
        elif kind == "retry_after":
            fail(eng, c, {"message": f"snooze {i}"}, retry_after_s=0)
        else:
            t[0] += 11
            set_clock(eng, t[0])
            assert reclaim(eng) == 1

    statuses = _drive(eng, sub.step_id, end, 10, t)
    assert statuses[-1] == "dead_letter" and len(statuses) == 3, statuses
    dl = one(eng, "select * from pgflight.dead_letters where step_id = %s", [sub.step_id])
    if path in ("lease_expiry", "mixed"):  # the mix ends error, retry_after, lease_expiry
        assert dl["reason"] == "lease_expired" and "lease expired" in dl["error"]["message"]
    else:
        assert dl["error"] == {"message": f"{'error' if path == 'error' else 'snooze'} 2"}
    assert dl["failed_attempts"] == 3
    set_clock(eng, t[0] + 3600)
    assert claim(eng, register(eng), 5, 10) == []


def test_c07_release_does_not_consume_an_attempt(eng: Conn) -> None:
    """
    C07: release_step (graceful shutdown) is documented as not consuming an attempt: 5 releases, ceiling
    3, still queued with 0 failures.
    """
    sub = submit(eng, max_attempts=3)
    w = register(eng)
    for _ in range(5):
        c = claim_one(eng, w, 10)
        assert release(eng, c) == "released"
    assert step(eng, sub.step_id)["failed_attempts"] == 0
    assert step(eng, sub.step_id)["status"] == "queued"
    assert len(attempts_of(eng, sub.step_id)) == 1  # release re-queues the same attempt
    c = claim_one(eng, w, 10)
    complete(eng, c)
    assert step(eng, sub.step_id)["status"] == "succeeded"


def test_c07_cancel_then_retry_step(eng: Conn) -> None:
    """
    C07 cancel-then-resume: retry_step applies to dead letters only (a cancelled step gets ZF006);
    a retried dead letter starts a fresh count and dead-letters again at the same ceiling.
    """
    sub = submit(eng, max_attempts=3)
    t = [0.0]
    cancel_run(eng, sub.run_id)
    assert sqlstate(lambda: eng.execute("select pgflight.retry_step(%s)", [sub.step_id])) == "ZF006"

    other = submit(eng, max_attempts=3)
    statuses = _drive(eng, other.step_id, lambda c, i: fail(eng, c, {"message": f"e{i}"}), 10, t)
    assert statuses == ["failed", "failed", "dead_letter"]
    eng.execute("select pgflight.retry_step(%s, 'ops', 'try again')", [other.step_id])
    assert step(eng, other.step_id)["failed_attempts"] == 0
    statuses = _drive(eng, other.step_id, lambda c, i: fail(eng, c, {"message": f"again {i}"}), 10, t)
    assert statuses == ["failed", "failed", "dead_letter"] * 2, statuses
    assert one(eng, "select error from pgflight.dead_letters where step_id = %s", [other.step_id])[
        "error"
    ] == {"message": "again 2"}
    retried = events(eng, step_id=other.step_id, reason="retried")[0]
    # the actor is the authenticated login; the name the caller gave is kept as a note
    assert retried["actor"] == scalar(eng, "select session_user::text")
    assert "[on behalf of ops]" in str(retried["detail"])


# --- C08 ----------------------------------------------------------------------------------


def test_c08_crash_on_the_last_attempt_is_dead_lettered(eng: Conn, dsn: str) -> None:
    """
    C08: max_attempts 1, the worker process is SIGKILLed holding the claim; after the lease the
    sweep dead-letters it and the other steps proceed. pgflight has no serialization (queue) keys,
    so there is no key slot to release; the claim only ever holds the attempt row's lease.
    """
    sub = submit(eng, "fragile", max_attempts=1)
    others = [submit(eng, "normal") for _ in range(5)]
    script = textwrap.dedent(f"""
        import os, signal, psycopg
        c = psycopg.connect({dsn!r}, autocommit=True)
        c.execute("select set_config('pgflight.fake_now', '{at(0).isoformat()}', false)")
        w = c.execute("select pgflight.register_worker('doomed')").fetchone()[0]
        got = c.execute("select attempt_id from pgflight.claim_batch(%s, 1, 5, array['fragile'])",
                        [w]).fetchall()
        print(got[0][0], flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30, check=False
    )
    assert proc.returncode == -9, proc.stderr
    assert int(proc.stdout.split()[0]) == sub.attempt_id
    assert attempt(eng, sub.attempt_id)["status"] == "claimed"
    set_clock(eng, 6)
    assert reclaim(eng) == 1
    assert step(eng, sub.step_id)["status"] == "dead_letter"
    assert drain(eng, register(eng), ["normal", "fragile"]) == 5
    assert all(step(eng, o.step_id)["status"] == "succeeded" for o in others)


# --- C15 ----------------------------------------------------------------------------------


def test_c15_deadline_times_out_a_heartbeating_step(eng: Conn) -> None:
    """
    C15: max_runtime_s 5, heartbeats keep the lease fresh; engine_health counts the attempt as over
    its deadline while still heartbeating; the sweep marks it timed_out (deadline_exceeded); the next
    heartbeat says lost; the slot's other work runs.
    """
    w = register(eng)
    hung = submit(eng, "hung", max_runtime_s=5, max_attempts=3)
    normal = [submit(eng, "normal") for _ in range(10)]
    c = claim_one(eng, w, 3, ["hung"])
    assert c.deadline_at == at(5)
    for s in (1, 2, 3, 4, 5.5):
        set_clock(eng, s)
        assert heartbeat(eng, w, [c])[c.attempt_id] == "held"
    assert scalar(eng, "select over_deadline_heartbeating from pgflight.engine_health") == 1
    assert reclaim(eng) == 1
    assert attempt(eng, c.attempt_id)["status"] == "timed_out"
    assert events(eng, attempt_id=c.attempt_id, reason="deadline_exceeded")
    assert scalar(eng, "select over_deadline_heartbeating from pgflight.engine_health") == 0
    assert heartbeat(eng, w, [c])[c.attempt_id] == "lease_lost"
    assert sqlstate(lambda: complete(eng, c)) == "ZF001"
    assert drain(eng, w, ["normal"]) == 10
    assert all(step(eng, n.step_id)["status"] == "succeeded" for n in normal)
    assert step(eng, hung.step_id)["status"] == "queued"  # a new attempt after the backoff


# --- C16 ----------------------------------------------------------------------------------


@pytest.mark.parametrize("change_after_claim", [False, True], ids=["as_claimed", "config_changed"])
def test_c16_reclaim_uses_the_stored_lease(eng: Conn, change_after_claim: bool) -> None:
    """
    C16: step lease 5 s beats the claim's 60 s; reclaimed at 5 s; changing steps.lease_s after the claim
    moves nothing.
    """
    sub = submit(eng, lease_s=5)
    w = register(eng)
    c = claim_one(eng, w, 60)
    assert c.lease_expires_at == at(5)
    if change_after_claim:
        eng.execute("update pgflight.steps set lease_s = 600 where id = %s", [sub.step_id])
        eng.execute("update pgflight.settings set default_lease_s = 900")
        set_clock(eng, 2)
        heartbeat(eng, w, [c])  # renews by the attempt's stored lease_s (5 s), not the new config
        assert attempt(eng, c.attempt_id)["lease_expires_at"] == at(7)
    expiry = 7 if change_after_claim else 5
    set_clock(eng, expiry - 0.5)
    assert reclaim(eng) == 0
    set_clock(eng, expiry + 1)  # one sweep period later
    assert reclaim(eng) == 1
    assert attempt(eng, c.attempt_id)["status"] == "lease_expired"


# --- C17 ----------------------------------------------------------------------------------


def _last_two_children(eng: Conn, w: int, n: int) -> tuple[int, Claim, Claim]:
    """A parked parent with n children, all but two completed; returns (parent step, last two claims)."""
    sub, _ = parked_parent(eng, w, n)
    got = claim(eng, w, n, 60, ["child"])
    assert complete_batch(eng, got[:-2]) == ["succeeded"] * (n - 2)
    return sub.step_id, got[-2], got[-1]


def _assert_woken_once(eng: Conn, parent: int) -> None:
    assert len(events(eng, step_id=parent, reason="parent_resumed")) == 1
    assert step(eng, parent)["status"] == "queued"


def test_c17_last_two_children_before_commit_wake_the_parent_once(eng: Conn, connect: ConnectFactory) -> None:
    """
    C17: the last two of 50 children complete in two explicit transactions: session A reaches the
    point before COMMIT; session B's completion is seen waiting on A's lock (the parent row: the
    "all terminal?" counter is serialised there), then A commits and B commits. 200 fresh parents:
    each leaves awaiting_children exactly once; 10 more wake_parents change nothing.
    """
    a, b = _pair(connect)
    w = register(eng)
    blocked = 0
    for i in range(200):
        parent, x, y = _last_two_children(eng, w, 50)
        order = "a_then_b" if i % 2 == 0 else "b_then_a"
        ra, rb, was_blocked = race(
            lambda: complete(a, x), a, lambda: complete(b, y), b, order=order, observer=eng
        )
        assert ra.error is None and rb.error is None, (ra, rb)
        blocked += was_blocked
        _assert_woken_once(eng, parent)
    assert blocked == 200, "the second completion did not wait on the first one's lock"
    for _ in range(10):
        assert scalar(eng, "select pgflight.wake_parents()") == 0
    assert scalar(eng, "select count(*) from pgflight.run_events where reason = 'parent_resumed'") == 200


def test_c17_last_two_of_200_children_at_the_same_instant(eng: Conn, connect: ConnectFactory) -> None:
    """C17 variant: 50 parents of 200 children whose last two complete (autocommit) at the same instant."""
    a, b = _pair(connect)
    w = register(eng)
    for _ in range(50):
        parent, x, y = _last_two_children(eng, w, 200)
        ra, rb, _ = race(lambda: complete(a, x), a, lambda: complete(b, y), b, order="together", observer=eng)
        assert ra.error is None and rb.error is None
        _assert_woken_once(eng, parent)
    assert scalar(eng, "select pgflight.wake_parents()") == 0


# --- C18 ----------------------------------------------------------------------------------


def _end_child(eng: Conn, w: int, path: str, child_step: int) -> None:
    """
    End a child by a side path: dead letter by the sweep, cancel_step, fatal fail_step, or gate rejection.
    """
    c = claim_one(eng, w, 5, ["side"])
    assert c.step_id == child_step
    if path == "dead_letter_by_sweep":
        set_clock(eng, 3600)
        assert reclaim(eng) == 1  # max_attempts 1: the sweep dead-letters it
    elif path == "cancel_step":
        eng.execute("select * from pgflight.cancel_step(%s, 'ops')", [child_step])
        assert release(eng, c) == "cancelled"
    elif path == "fail_fatal":
        fail(eng, c, {"message": "fatal"}, retryable=False)
    elif path == "gate_rejected":
        asked = one(eng, "select * from pgflight.request_approval(%s, %s, 'go')", [c.attempt_id, c.token])
        assert asked["waiting"]
        eng.execute("select * from pgflight.approve(%s, 'reject', 'reviewer')", [child_step])
        again = claim_one(eng, w, 5, ["side"])  # the recipe runs again, sees the rejection, ends fatally
        seen = one(
            eng, "select * from pgflight.request_approval(%s, %s, 'go')", [again.attempt_id, again.token]
        )
        assert seen["decision"] == "reject" and not seen["waiting"]
        fail(eng, again, {"message": "rejected at gate go"}, retryable=False)
    assert step(eng, child_step)["status"] in ("dead_letter", "cancelled")


@pytest.mark.parametrize("path", ["dead_letter_by_sweep", "cancel_step", "fail_fatal", "gate_rejected"])
def test_c18_side_path_endings_wake_the_parent(eng: Conn, path: str) -> None:
    """C18 part 1: a child ending by a side path pokes its parent like a success: the parent wakes once."""
    w = register(eng)
    sub = submit(eng, "parent")
    pc = claim_one(eng, w, 30, ["parent"])
    kids = one(
        eng,
        "select * from pgflight.spawn_children(%s, %s, %s)",
        [
            pc.attempt_id,
            pc.token,
            Jsonb(
                [
                    {"key": "a-ok", "recipe": "ok", "input": {}},
                    {"key": "b-side", "recipe": "side", "input": {}, "options": {"max_attempts": 1}},
                ]
            ),
        ],
    )
    assert kids["parked"]
    assert drain(eng, w, ["ok"]) == 1
    assert step(eng, sub.step_id)["status"] == "awaiting_children"
    side = scalar(
        eng, "select id from pgflight.steps where parent_id = %s and step_key = 'b-side'", [sub.step_id]
    )
    _end_child(eng, w, path, side)
    assert len(events(eng, step_id=sub.step_id, reason="parent_resumed")) == 1
    assert step(eng, sub.step_id)["status"] == "queued"
    seen = rows(eng, "select step_key, status from pgflight.children_results(%s)", [sub.step_id])
    assert [r["step_key"] for r in seen] == ["a-ok", "b-side"] and seen[0]["status"] == "succeeded"
    assert scalar(eng, "select pgflight.wake_parents()") == 0


def test_c18_failing_the_parent_cancels_its_children_in_the_same_transaction(eng: Conn) -> None:
    """
    C18 part 2: fail_fast parent; one child fails fatally while 2 siblings run and 1 is queued.
    The parent dead-letters and every non-terminal child is cancelled (leased ones cancel_requested)
    in that same transaction; after the leases lapse the sweep requeues nothing.
    """
    w = register(eng)
    sub, _ = parked_parent(eng, w, 4, fail_fast=True)
    running = [claim_one(eng, w, 5, ["child"]) for _ in range(3)]
    queued = scalar(
        eng,
        "select step_id from pgflight.step_status where parent_id = %s and status = 'queued'",
        [sub.step_id],
    )
    fail(eng, running[0], {"message": "boom"}, retryable=False)

    assert step(eng, sub.step_id)["status"] == "dead_letter"
    assert scalar(eng, "select status from pgflight.runs where id = %s", [sub.run_id]) == "failed"
    assert step(eng, queued)["status"] == "cancelled"
    assert {attempt(eng, r.attempt_id)["status"] for r in running[1:]} == {"cancel_requested"}
    xids = rows(
        eng,
        "select distinct xmin::text as x from pgflight.events where run_id = %s and"
        " (reason in ('cancelled', 'cancel_requested', 'child_failed')"
        " or (reason = 'failed' and attempt_id = %s))",
        [sub.run_id, running[0].attempt_id],
    )
    assert len(xids) == 1, "the cancels were not written in the failing transaction"
    for r in running[1:]:
        assert heartbeat(eng, w, [r])[r.attempt_id] == "cancelled"
        assert sqlstate(lambda r=r: complete(eng, r)) == "ZF002"
    set_clock(eng, 3600)
    assert reclaim(eng) == 2
    assert {step(eng, r.step_id)["status"] for r in running[1:]} == {"cancelled"}
    assert claim(eng, w, 10, 5) == []


# --- C25 ----------------------------------------------------------------------------------


def test_c25_approval_before_the_gate_is_used(eng: Conn) -> None:
    """
    C25: approve while the step is still queued: stored, used at the gate (no block); a second approve is
    a no-op.
    """
    w = register(eng)
    sub = submit(eng, "gated")
    first = one(
        eng, "select * from pgflight.approve(%s, 'approve', 'alice', 'early', 'deploy')", [sub.step_id]
    )
    assert first["applied"] is True
    again = one(eng, "select * from pgflight.approve(%s, 'approve', 'alice', null, 'deploy')", [sub.step_id])
    assert again["applied"] is False
    assert (
        sqlstate(
            lambda: eng.execute(
                "select * from pgflight.approve(%s, 'reject', 'bob', null, 'deploy')", [sub.step_id]
            )
        )
        == "ZF008"
    )
    c = claim_one(eng, w, 30, ["gated"])
    got = one(eng, "select * from pgflight.request_approval(%s, %s, 'deploy')", [c.attempt_id, c.token])
    # the actor is the authenticated login; 'alice' is kept in the note
    me = scalar(eng, "select session_user::text")
    assert (got["decision"], got["actor"], got["waiting"]) == ("approve", me, False)
    assert got["note"] == "early [on behalf of alice]"
    assert attempt(eng, c.attempt_id)["status"] == "running"
    assert len(events(eng, step_id=sub.step_id, reason="approval_decided")) == 1
    assert not events(eng, step_id=sub.step_id, reason="approval_requested")


@pytest.mark.parametrize("gate_key", ["go", None], ids=["named_gate", "default_gate"])
def test_c25_approve_and_reject_race_one_wins(
    eng: Conn, connect: ConnectFactory, gate_key: str | None
) -> None:
    """
    C25: approve and reject from two sessions at a parked gate (named, or left to the default: the
    step's pending gate): exactly one wins, one approval_decided event, the loser gets ZF008, and
    the winner's decision repeated is a no-op.
    """
    a, b = _pair(connect)
    w = register(eng)
    winners: dict[str, int] = {"approve": 0, "reject": 0}
    problems: list[tuple[str, Any, Any]] = []
    q = "select * from pgflight.approve(%s, %s, %s, null, %s)"
    for i in range(60):
        order = ("together", "a_then_b", "b_then_a")[i % 3]
        sub = submit(eng, f"g{i}")
        c = claim_one(eng, w, 30, [f"g{i}"])
        assert one(eng, "select * from pgflight.request_approval(%s, %s, 'go')", [c.attempt_id, c.token])[
            "waiting"
        ]
        ya, yb, _ = race(
            lambda: a.execute(q, [sub.step_id, "approve", "alice", gate_key]).fetchall(),
            a,
            lambda: b.execute(q, [sub.step_id, "reject", "bob", gate_key]).fetchall(),
            b,
            order=order,
            observer=eng,
        )
        if sorted(str(x.error) for x in (ya, yb)) != ["None", "ZF008"]:
            problems.append((order, ya, yb))
            continue
        won = "approve" if ya.error is None else "reject"
        winners[won] += 1
        assert len(events(eng, step_id=sub.step_id, reason="approval_decided")) == 1
        assert step(eng, sub.step_id)["status"] == "queued"
        again = one(eng, q, [sub.step_id, won, "carol", gate_key])
        if again["applied"] is not False:
            problems.append((order, "repeat", again))
    assert not problems, f"{len(problems)} of 60 rounds broke C25: {problems[:4]}"
    assert winners["approve"] >= 20 and winners["reject"] >= 20, winners


# --- fan-in at size, trees ----------------------------------------------------------------


def test_10000_children_on_8_connections_wake_the_parent_once(eng: Conn, connect: ConnectFactory) -> None:
    """
    Invariant 6 at size: 10,000 children claimed and completed by 8 connections in batches wake the parent
    exactly once.
    """
    set_clock(eng, None)
    w = register(eng)
    sub, _ = parked_parent(eng, w, 10_000)

    def worker(i: int) -> int:
        c = connect(60)
        return drain(c, register(c, f"w{i}"), ["child"], batch=50)

    assert sum(run_parallel([lambda i=i: worker(i) for i in range(8)])) == 10_000
    assert len(events(eng, step_id=sub.step_id, reason="parent_resumed")) == 1
    assert step(eng, sub.step_id)["status"] == "queued"
    assert scalar(eng, "select children_pending from pgflight.steps where id = %s", [sub.step_id]) == 0
    assert scalar(eng, "select pgflight.wake_parents()") == 0


def test_trees_three_levels_deep_wake_each_parent_once(eng: Conn) -> None:
    """
    A root spawns 3 children, each spawns 3 grandchildren: every parent wakes exactly once, and the run
    succeeds.
    """
    w = register(eng)
    sub = submit(eng, "root")
    root = claim_one(eng, w, 30, ["root"])
    spawn(eng, root, ["m0", "m1", "m2"], "mid")
    for mid in claim(eng, w, 10, 30, ["mid"]):
        spawn(eng, mid, [f"l{i}" for i in range(3)], "leaf")
    assert drain(eng, w, ["leaf"]) == 9
    assert drain(eng, w, ["mid"]) == 3  # the woken mids run again and finish
    assert step(eng, sub.step_id)["status"] == "queued"
    assert drain(eng, w, ["root"]) == 1
    woken = rows(
        eng,
        "select step_id, count(*) as n from pgflight.run_events where reason = 'parent_resumed'"
        " group by step_id",
    )
    assert len(woken) == 4 and {r["n"] for r in woken} == {1}
    assert scalar(eng, "select status from pgflight.runs where id = %s", [sub.run_id]) == "succeeded"
    assert scalar(eng, "select max(depth) from pgflight.steps where run_id = %s", [sub.run_id]) == 2
