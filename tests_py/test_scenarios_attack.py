"""
Attacks on pgflight with the failure scenarios of ../shared/cases/SCENARIOS.md that the other test
modules do not cover yet, and with the races and edges around them: each test names the scenario
(or invariant) it attacks. Tests that expose a real engine bug are marked xfail(strict=True) with
the bug's place, so the suite stays green and a fix turns them into failures to un-mark.

SQL-level attacks run on the fake clock with several real connections (core_helpers.race);
worker-level ones run an in-process Worker on a thread (attack_support.running_worker) so the
test can read its heartbeat lags and patch its client.
"""

# ruff: noqa: B023  (each lambda runs within its own loop iteration, inside race())

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from psycopg.types.json import Jsonb

from attack_support import audit, p99, registry, running_worker, wait_until
from core_helpers import (
    LIVE,
    Claim,
    at,
    Conn,
    attempts_of,
    cancel_run,
    claim,
    claim_one,
    complete,
    complete_batch,
    events,
    fail,
    heartbeat,
    invariant_violations,
    parked_parent,
    race,
    reclaim,
    register,
    rows,
    scalar,
    set_clock,
    setup_engine,
    spawn,
    sqlstate,
    step,
    submit,
    submit_many,
    table_counts,
)
from pgflight import db
from pgflight.recipes import StepContext
from test_worker_connections import pgbouncer  # noqa: F401  (fixture)

ConnectFactory = Callable[..., Conn]
ROOT = Path(__file__).resolve().parents[1]
NO_BACKOFF = {"base_s": 0, "jitter": 0}


@pytest.fixture
def eng(conn: Conn) -> Iterator[Conn]:
    """The test database on the fake clock at T0 with a workspace; invariants checked afterwards."""
    setup_engine(conn)
    set_clock(conn, 0)
    yield conn
    assert invariant_violations(conn) == {}


@pytest.fixture
def pair(connect: ConnectFactory) -> tuple[Conn, Conn]:
    """Two racing connections on the fake clock at T0."""
    a, b = connect(10), connect(10)
    set_clock(a, 0)
    set_clock(b, 0)
    return a, b


def _live(conn: Conn, run_id: int) -> list[dict[str, Any]]:
    return rows(
        conn,
        "select id, step_id, status from pgflight.step_attempts where run_id = %s and status = any (%s)",
        [run_id, list(LIVE)],
    )


# --- invariant 7 / C26: cancel_run racing a write that creates attempts ----------------------

CANCEL_RIVALS = ("fail_step_retry", "reclaim_retry", "spawn_children")


@pytest.mark.xfail(
    strict=True,
    reason="cancel_run misses attempts a concurrent writer inserts: cancel_run.sql:29 collects the run's "
    "steps, and _lifecycle.sql:51 (_cancel_steps) locks the live attempts, each with a statement snapshot "
    "taken before the rival committed, so a retry attempt (_fail_attempt) or new children (spawn_children) "
    "stay queued under the cancelled run and claim_batch (claim_batch.sql:44) hands them out",
)
@pytest.mark.parametrize("rival", CANCEL_RIVALS)
def test_c26_inv7_cancel_run_racing_a_write_that_creates_attempts(
    eng: Conn, pair: tuple[Conn, Conn], rival: str
) -> None:
    """
    Invariant 7 / C18 part 2: the writer holds the attempt's lock (fail_step with a retry left, the
    reclaim sweep on an expired lease, or spawn_children) while cancel_run starts and waits on that
    lock; then the writer commits. Afterwards nothing in the run is live and nothing is claimable.
    """
    a, b = pair
    w = register(eng)
    sub = submit(eng, "r", max_attempts=3, backoff=NO_BACKOFF)
    held = claim_one(eng, w, 10, ["r"])
    writer: Callable[[], Any]
    if rival == "fail_step_retry":
        writer = lambda: fail(a, held, {"message": "transient"})  # noqa: E731
    elif rival == "reclaim_retry":
        set_clock(a, 11)
        writer = lambda: reclaim(a)  # noqa: E731
    else:
        writer = lambda: spawn(a, held, ["k1", "k2", "k3"])  # noqa: E731
    first, second, blocked = race(
        writer, a, lambda: cancel_run(b, sub.run_id), b, order="a_then_b", observer=eng
    )
    assert first.error is None and second.error is None, (first, second)
    assert blocked, "cancel_run waited on the writer's lock"
    assert scalar(eng, "select status from pgflight.runs where id = %s", [sub.run_id]) == "cancelled"
    assert claim(eng, w, 10, 30) == [], "nothing of a cancelled run is claimable"
    assert [r for r in _live(eng, sub.run_id) if r["status"] != "cancel_requested"] == []


# --- C10: writes without a valid token ------------------------------------------------------

FENCED_WRITES: dict[str, str] = {
    "start_step": "select * from pgflight.start_step(%(a)s, %(t)s)",
    "complete_step": "select * from pgflight.complete_step(%(a)s, %(t)s, '{}')",
    "fail_step": "select * from pgflight.fail_step(%(a)s, %(t)s, '{}')",
    "release_step": "select * from pgflight.release_step(%(a)s, %(t)s)",
    "spawn_children": """select * from pgflight.spawn_children(%(a)s, %(t)s, '[{"key": "k", "recipe": "r"}]')""",
    "request_approval": "select * from pgflight.request_approval(%(a)s, %(t)s, 'gate')",
    "record_effect": "select * from pgflight.record_effect(%(a)s, %(t)s, 'fx', '{}')",
}


def test_c10_no_write_without_the_current_token(eng: Conn) -> None:
    """
    C10: every fenced write with no token, a guessed token, the previous holder's token or another
    attempt's token is refused with ZF001 (ZF003 for an unknown attempt) and changes nothing;
    heartbeat says 'lost' for each and renews nothing; complete_batch reports lease_lost.
    """
    w = register(eng)
    sub = submit(eng, "r", max_attempts=5, backoff=NO_BACKOFF)
    other_sub = submit(eng, "o")
    old = claim_one(eng, w, 10, ["r"])
    set_clock(eng, 11)
    assert reclaim(eng) == 1
    cur = claim_one(eng, w, 10, ["r"])
    other = claim_one(eng, w, 10, ["o"])
    bad_tokens = {
        "null": (cur.attempt_id, None),
        "guessed": (cur.attempt_id, cur.token + 1000),
        "previous holder": (old.attempt_id, old.token),
        "other attempt's": (cur.attempt_id, other.token),
        "unknown attempt": (10**12, cur.token),
    }
    before = table_counts(eng)
    lease_before = scalar(eng, "select lease_expires_at from pgflight.step_attempts where id = %s", [cur.attempt_id])
    set_clock(eng, 12)
    for what, (attempt_id, token) in bad_tokens.items():
        for name, query in FENCED_WRITES.items():
            got = sqlstate(lambda: eng.execute(query, {"a": attempt_id, "t": token}))
            want = "ZF003" if what == "unknown attempt" else "ZF001"
            assert got == want, f"{name} with the {what} token: {got}"
        beat = eng.execute(
            "select status from pgflight.heartbeat(%s, %s::bigint[], %s::bigint[])", [w, [attempt_id], [token]]
        ).fetchall()
        assert beat == [("lost",)], (what, beat)
    assert table_counts(eng) == before
    assert scalar(eng, "select lease_expires_at from pgflight.step_attempts where id = %s", [cur.attempt_id]) == (
        lease_before
    )
    forged = Claim(cur.attempt_id, other.token, cur.step_id, cur.run_id, 2, cur.lease_expires_at, None)
    assert complete_batch(eng, [forged]) == ["lease_lost"]
    assert step(eng, sub.step_id)["status"] == "running"
    complete(eng, cur)
    complete(eng, other)
    assert step(eng, other_sub.step_id)["status"] == "succeeded"


def test_c10_worker_never_runs_a_body_it_did_not_claim(dsn: str, conn: Conn, monkeypatch: pytest.MonkeyPatch) -> None:
    """
    C10 in the worker: when claim_batch returns nothing (the claim lost every row to another
    claimer), the worker runs no step body, writes nothing and keeps polling; once claims come
    back, bodies run only with the tokens those claims returned.
    """
    db.create_workspace(conn, "w")
    runs = [db.submit_run(conn, "w", "probe", {"i": i}) for i in range(3)]
    ran: list[tuple[int, int]] = []
    calls = {"n": 0}
    real_claim = db.claim_batch
    empty = threading.Event()
    empty.set()

    def claim_nothing(*args: Any, **kwargs: Any) -> list[Any]:
        calls["n"] += 1
        return [] if empty.is_set() else real_claim(*args, **kwargs)

    def probe(ctx: StepContext) -> dict[str, int]:
        ran.append((ctx.attempt_id, ctx.token))
        return {"i": ctx.input["i"]}

    monkeypatch.setattr(db, "claim_batch", claim_nothing)
    with running_worker(dsn, registry(probe=probe), listen=False, fallback_poll_s=0.05) as w:
        wait_until(lambda: calls["n"] >= 10, 10, "ten empty claims")
        assert ran == [] and w.steps_done == 0
        assert scalar(conn, "select count(*) from pgflight.step_attempts where status <> 'queued'") == 0
        empty.clear()
        wait_until(lambda: len(ran) == 3, 10, "the three steps once claims return rows")
    held = rows(conn, "select id, fencing_token from pgflight.step_attempts where status = 'succeeded'")
    assert sorted(ran) == sorted((r["id"], r["fencing_token"]) for r in held)
    assert [db.run_status(conn, r.run_id).status for r in runs] == ["succeeded"] * 3


# --- complete_batch / heartbeat with duplicate ids --------------------------------------------


@pytest.mark.xfail(
    strict=True,
    reason="complete_step.sql:24-30 (_complete_many) locks through a join with the caller's arrays, so an "
    "attempt id given twice is in v_ids twice and the events insert (complete_step.sql:42) joins v_ids: two "
    "'succeeded' events for one attempt; fix: lock over (select distinct ...) or reject duplicate ids (22023)",
)
def test_inv10_complete_batch_with_a_duplicate_id_logs_one_success(eng: Conn) -> None:
    """Invariant 10 (one terminal event per attempt): the same attempt twice in one complete_batch."""
    w = register(eng)
    submit(eng, "r")
    c = claim_one(eng, w, 30, ["r"])
    outcomes = complete_batch(eng, [c, c])
    assert outcomes[0] == "succeeded"
    assert len(events(eng, attempt_id=c.attempt_id, reason="succeeded")) == 1


def test_c10_heartbeat_with_duplicate_ids_renews_once_and_fences_the_stale_copy(eng: Conn) -> None:
    """Heartbeat with an id twice (same token; then once stale): ok for the holder's, lost for the stale."""
    w = register(eng)
    submit(eng, "r")
    c = claim_one(eng, w, 30, ["r"])
    set_clock(eng, 10)
    assert heartbeat(eng, w, [c, c]) == {c.attempt_id: "ok"}
    got = eng.execute(
        "select status from pgflight.heartbeat(%s, %s::bigint[], %s::bigint[])",
        [w, [c.attempt_id, c.attempt_id], [c.token, c.token - 1]],
    ).fetchall()
    assert got == [("ok",), ("lost",)]
    assert scalar(eng, "select lease_expires_at from pgflight.step_attempts where id = %s", [c.attempt_id]) == at(40)
    complete(eng, c)
