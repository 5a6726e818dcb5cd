"""
Attacks on pgflight with the failure scenarios of docs/scenarios.md that the other test modules do
not cover yet, and with the races and edges around them: each test names the scenario
(docs/scenarios.md) or invariant (docs/state_machine.md) it attacks. Five of them exposed real
engine bugs (cancel_run missing attempts a concurrent write created, a duplicate id completing
twice, purge of a run with a leased attempt, unvalidated child options, a zero heartbeat interval);
all five are fixed and the tests stay.

SQL-level attacks run on the fake clock with several real connections (core_helpers.race);
worker-level ones run an in-process Worker on a thread (attack_support.running_worker) so the
test can read its heartbeat lags and patch its client.
"""

# ruff: noqa: B023  (each lambda runs within its own loop iteration, inside race())

from __future__ import annotations

import os
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
    Conn,
    at,
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
    run_parallel,
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
from pgflight import db, errors
from pgflight.recipes import StepContext
from pgflight.worker import Worker
from test_worker_connections import pgbouncer  # noqa: F401  (fixture)

ConnectFactory = Callable[..., Conn]
ROOT = Path(__file__).resolve().parents[1]
NO_BACKOFF = {"base_s": 0, "jitter": 0}


@pytest.fixture
def bare(conn: Conn) -> Conn:
    """The test database on the fake clock at T0 with a workspace (for tests that check by themselves)."""
    setup_engine(conn)
    set_clock(conn, 0)
    return conn


@pytest.fixture
def eng(bare: Conn) -> Iterator[Conn]:
    """`bare`, with the engine invariants (core_helpers.INVARIANTS) checked afterwards."""
    yield bare
    assert invariant_violations(bare) == {}


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


@pytest.mark.parametrize("rival", CANCEL_RIVALS)
def test_c26_inv7_cancel_run_racing_a_write_that_creates_attempts(
    bare: Conn, pair: tuple[Conn, Conn], rival: str
) -> None:
    """
    Invariant 7 / C18 part 2: the writer holds the attempt's lock (fail_step with a retry left, the
    reclaim sweep on an expired lease, or spawn_children) while cancel_run starts and waits on that
    lock; then the writer commits. Afterwards nothing in the run is live and nothing is claimable.
    """
    a, b = pair
    eng = bare
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
    assert [r for r in _live(eng, sub.run_id) if r["status"] != "cancel_requested"] == []
    set_clock(eng, 100)
    assert claim(eng, w, 10, 30) == [], "nothing of a cancelled run is claimable"
    assert invariant_violations(eng) == {}


# --- C10: writes without a valid token ------------------------------------------------------

FENCED_WRITES: dict[str, str] = {
    "start_step": "select * from pgflight.start_step(%(a)s, %(t)s)",
    "complete_step": "select * from pgflight.complete_step(%(a)s, %(t)s, '{}')",
    "fail_step": "select * from pgflight.fail_step(%(a)s, %(t)s, '{}')",
    "release_step": "select * from pgflight.release_step(%(a)s, %(t)s)",
    "spawn_children": "select * from pgflight.spawn_children(%(a)s, %(t)s,"
    """ '[{"key": "k", "recipe": "r"}]')""",
    "request_approval": "select * from pgflight.request_approval(%(a)s, %(t)s, 'gate')",
    "record_effect": "select * from pgflight.record_effect(%(a)s, %(t)s, 'fx', '{}')",
}


def test_c10_no_write_without_the_current_token(eng: Conn) -> None:
    """
    C10: every fenced write with no token, a guessed token, the previous holder's token or another
    attempt's token is refused with ZF001 (ZF003 for an unknown attempt, 22023 for no token) and
    changes nothing;
    heartbeat says 'lease_lost' for each and renews nothing; complete_batch reports lease_lost.
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
    lease_before = scalar(
        eng, "select lease_expires_at from pgflight.step_attempts where id = %s", [cur.attempt_id]
    )
    set_clock(eng, 12)
    for what, (attempt_id, token) in bad_tokens.items():
        for name, query in FENCED_WRITES.items():
            if name == "record_effect" and what == "previous holder":
                continue  # by contract a receipt is kept from any past holder (effects.sql), see below
            got = sqlstate(lambda: eng.execute(query, {"a": attempt_id, "t": token}))
            # no token at all is bad input, refused before anything is read (the fence's rule)
            want = {"null": "22023", "unknown attempt": "ZF003"}.get(what, "ZF001")
            assert got == want, f"{name} with the {what} token: {got}"
        heartbeat = "select status from pgflight.heartbeat(%s, %s::bigint[], %s::bigint[])"
        if what == "null":  # a NULL element refuses the whole heartbeat
            assert sqlstate(lambda: eng.execute(heartbeat, [w, [attempt_id], [token]])) == "22023"
            continue
        beat = eng.execute(heartbeat, [w, [attempt_id], [token]]).fetchall()
        assert beat == [("lease_lost",)], (what, beat)
    assert table_counts(eng) == before
    assert scalar(
        eng, "select lease_expires_at from pgflight.step_attempts where id = %s", [cur.attempt_id]
    ) == (lease_before)
    late = rows(eng, "select * from pgflight.record_effect(%s, %s, 'fx', '{}')", [old.attempt_id, old.token])
    assert [(r["recorded"], r["lease_held"]) for r in late] == [(True, False)], (
        "kept, and told it lost the lease"
    )
    forged = Claim(cur.attempt_id, other.token, cur.step_id, cur.run_id, 2, cur.lease_expires_at, None)
    assert complete_batch(eng, [forged]) == ["lease_lost"]
    assert step(eng, sub.step_id)["status"] == "running"
    complete(eng, cur)
    complete(eng, other)
    assert step(eng, other_sub.step_id)["status"] == "succeeded"


def test_c10_worker_never_runs_a_body_it_did_not_claim(
    dsn: str, conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
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


def test_inv10_complete_batch_with_a_duplicate_id_logs_one_success(eng: Conn) -> None:
    """Invariant 10 (one terminal event per attempt): the same attempt twice in one complete_batch."""
    w = register(eng)
    submit(eng, "r")
    c = claim_one(eng, w, 30, ["r"])
    outcomes = complete_batch(eng, [c, c])
    assert outcomes[0] == "succeeded"
    assert len(events(eng, attempt_id=c.attempt_id, reason="succeeded")) == 1


def test_complete_batch_with_an_attempt_twice_keeps_the_first_result(eng: Conn) -> None:
    """The same attempt and token twice in one complete_batch, two results: the first one given is
    stored, whatever plan the batch runs on (found by an attack review of the hot path)."""
    w = register(eng)
    submit(eng, "r")
    c = claim_one(eng, w, 30, ["r"])
    got = eng.execute(
        "select outcome from pgflight.complete_batch(%s, %s, %s)",
        [[c.attempt_id, c.attempt_id], [c.token, c.token], [Jsonb({"v": "first"}), Jsonb({"v": "second"})]],
    ).fetchall()
    assert [r[0] for r in got] == ["succeeded", "succeeded"]
    stored = scalar(eng, "select result from pgflight.step_attempts where id = %s", [c.attempt_id])
    assert stored == {"v": "first"}


def test_c10_heartbeat_with_duplicate_ids_renews_once_and_fences_the_stale_copy(eng: Conn) -> None:
    """Heartbeat with an id twice (same token; then once stale): ok for the holder's, lost for the stale."""
    w = register(eng)
    submit(eng, "r")
    c = claim_one(eng, w, 30, ["r"])
    set_clock(eng, 10)
    assert heartbeat(eng, w, [c, c]) == {c.attempt_id: "held"}
    got = eng.execute(
        "select status from pgflight.heartbeat(%s, %s::bigint[], %s::bigint[])",
        [w, [c.attempt_id, c.attempt_id], [c.token, c.token - 1]],
    ).fetchall()
    assert got == [("held",), ("lease_lost",)]
    assert scalar(
        eng, "select lease_expires_at from pgflight.step_attempts where id = %s", [c.attempt_id]
    ) == at(40)
    complete(eng, c)


# --- side paths on cancelled, parked and finished steps (C18, C25, C46) -----------------------


def test_c18_spawn_after_the_parent_was_cancelled_creates_nothing(eng: Conn) -> None:
    """spawn_children by an attempt whose run was cancelled is refused with ZF002 and creates no child."""
    w = register(eng)
    sub = submit(eng, "p")
    held = claim_one(eng, w, 30, ["p"])
    assert cancel_run(eng, sub.run_id)["cancel_requested"] == 1
    assert sqlstate(lambda: spawn(eng, held, ["a", "b"])) == "ZF002"
    assert scalar(eng, "select count(*) from pgflight.steps where run_id = %s", [sub.run_id]) == 1
    assert heartbeat(eng, w, [held]) == {held.attempt_id: "cancelled"}


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_c25_deciding_the_gate_of_a_cancelled_step_does_not_revive_it(eng: Conn, decision: str) -> None:
    """C25 x invariant 7: a step parked at a gate is cancelled; a later decision requeues nothing."""
    w = register(eng)
    sub = submit(eng, "g")
    held = claim_one(eng, w, 30, ["g"])
    got = rows(eng, "select * from pgflight.request_approval(%s, %s, 'gate')", [held.attempt_id, held.token])
    assert got[0]["waiting"] is True
    assert cancel_run(eng, sub.run_id)["cancelled"] == 1
    eng.execute("select * from pgflight.approve(%s, %s, 'ops', null, 'gate')", [sub.step_id, decision])
    assert _live(eng, sub.run_id) == []
    assert step(eng, sub.step_id)["status"] == "cancelled"
    assert scalar(eng, "select status from pgflight.runs where id = %s", [sub.run_id]) == "cancelled"
    assert claim(eng, w, 5, 30) == []


def test_c46_purge_finished_keeps_active_runs_and_leaves_their_workers_working(eng: Conn) -> None:
    """purge_finished(0) deletes finished runs only; a running run keeps every row and completes."""
    w = register(eng)
    done, active = submit(eng, "d"), submit(eng, "a")
    complete(eng, claim_one(eng, w, 30, ["d"]))
    held = claim_one(eng, w, 30, ["a"])
    set_clock(eng, 5)
    assert scalar(eng, "select pgflight.purge_finished(0)") == 1
    assert scalar(eng, "select count(*) from pgflight.runs where id = %s", [done.run_id]) == 0
    assert scalar(eng, "select count(*) from pgflight.run_events where run_id = %s", [active.run_id]) == 3
    assert heartbeat(eng, w, [held]) == {held.attempt_id: "held"}
    complete(eng, held)
    assert scalar(eng, "select status from pgflight.runs where id = %s", [active.run_id]) == "succeeded"


def test_c46_purge_finished_spares_a_cancelled_run_whose_attempt_is_still_leased(eng: Conn) -> None:
    """C46: a run cancelled while its step runs is not purged before that attempt ends."""
    w = register(eng)
    sub = submit(eng, "a")
    claim_one(eng, w, 30, ["a"])
    cancel_run(eng, sub.run_id)
    set_clock(eng, 5)
    assert scalar(eng, "select pgflight.purge_finished(0)") == 0
    assert events(eng, run_id=sub.run_id)


@pytest.mark.parametrize("order", ["a_then_b", "b_then_a", "together"])
def test_inv6_replay_of_a_child_racing_the_last_child_wakes_the_parent_once(
    eng: Conn, pair: tuple[Conn, Conn], order: str
) -> None:
    """
    Invariant 6: child X has ended; replay_from(X) races the completion of the last pending child Y.
    Either replay is refused (ZF006: the parent was already woken) or the parent waits for X's new
    attempt too; the parent leaves awaiting_children exactly once and the tree completes.
    """
    a, b = pair
    w = register(eng)
    parent, _ = parked_parent(eng, w, 2)
    x = claim_one(eng, w, 30, ["child"])
    complete(eng, x)
    y = claim_one(eng, w, 30, ["child"])
    first, second, _ = race(
        lambda: complete(a, y),
        a,
        lambda: scalar(b, "select pgflight.replay_from(%s)", [x.step_id]),
        b,
        order=order,
        observer=eng,
    )
    assert first.error is None
    assert second.error in (None, "ZF006"), second
    if second.error is None:
        assert step(eng, parent.step_id)["status"] == "awaiting_children"
        complete(eng, claim_one(eng, w, 30, ["child"]))
    woken = events(eng, step_id=parent.step_id, reason="parent_resumed")
    assert len(woken) == 1, woken
    assert scalar(eng, "select pgflight.wake_parents()") == 0
    again = claim_one(eng, w, 30, [step(eng, parent.step_id)["recipe"]])
    complete(eng, again)
    assert scalar(eng, "select status from pgflight.runs where id = %s", [parent.run_id]) == "succeeded"
    assert audit(eng) == {}


# --- bad child options (C41 "fail fast with a clear error") -------------------------------------


@pytest.mark.parametrize(
    "options",
    [{"max_attempts": 0}, {"lease_s": -1}, {"priority": "high"}, {"max_runtime_s": 0}],
    ids=["max_attempts_0", "lease_negative", "priority_text", "max_runtime_0"],
)
def test_bad_child_options_get_22023(eng: Conn, options: dict[str, Any]) -> None:
    """A malformed child option is refused with the documented 22023 and creates nothing."""
    w = register(eng)
    submit(eng, "p")
    held = claim_one(eng, w, 30, ["p"])
    children = [{"key": "k", "recipe": "c", "input": {}, "options": options}]
    got = sqlstate(
        lambda: eng.execute(
            "select * from pgflight.spawn_children(%s, %s, %s)",
            [held.attempt_id, held.token, Jsonb(children)],
        )
    )
    assert got == "22023"


# --- very large batches ---------------------------------------------------------------------


def _backend_cpu_s(pid: int) -> float | None:
    """CPU seconds (utime + stime) of a server backend on this host, or None when not readable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _timed(conn: Conn, fn: Callable[[], Any]) -> tuple[Any, float]:
    """
    fn's result and its cost in seconds: the CPU time of `conn`'s backend when the server runs on
    this host (other processes' load does not stretch it), else the wall time.
    """
    pid = conn.execute("select pg_backend_pid()").fetchone()[0]
    cpu0, t0 = _backend_cpu_s(pid), time.perf_counter()
    value = fn()
    cpu1, t1 = _backend_cpu_s(pid), time.perf_counter()
    return value, (cpu1 - cpu0) if cpu0 is not None and cpu1 is not None else t1 - t0


def test_inv1_claim_heartbeat_complete_batches_of_10000(eng: Conn) -> None:
    """
    Invariant 1 at scale: claim_batch(10000) hands out 10,000 distinct attempts with distinct tokens;
    one heartbeat renews all of them and one complete_batch finishes them. Each call stays about
    linear: 4x the batch costs well under 16x (quadratic) the time (the backend's CPU time, so a
    loaded machine does not fail it). Before the large round, step_attempts is analyzed while few
    attempts are leased, as autovacuum did in a CI run: the completion's generic plan then read
    the leased attempts' index once per given attempt (6.4 s of CPU for 10,000 instead of 0.4).
    """
    w = register(eng)
    submit_many(eng, 12500, "bulk")
    timings: dict[int, tuple[float, float, float]] = {}
    for n in (2500, 10000):
        if n == 10000:
            eng.execute("analyze pgflight.step_attempts")
        got, t_claim = _timed(eng, lambda: claim(eng, w, n, 60, ["bulk"]))
        assert len(got) == n
        assert len({c.attempt_id for c in got}) == n and len({c.token for c in got}) == n
        beat, t_beat = _timed(eng, lambda: heartbeat(eng, w, got))
        assert set(beat.values()) == {"held"} and len(beat) == n
        outcomes, t_done = _timed(eng, lambda: complete_batch(eng, got))
        assert outcomes == ["succeeded"] * n
        timings[n] = (t_claim, t_beat, t_done)
    print("batch timings (claim, heartbeat, complete) s:", timings)
    for i, name in enumerate(("claim_batch", "heartbeat", "complete_batch")):
        small, big = timings[2500][i], timings[10000][i]
        assert big < 10 * max(small, 0.02), f"{name}: {small:.3f}s for 2,500, {big:.3f}s for 10,000"


# --- C35: NOTIFY payloads with a 10 MB input and long names ----------------------------------


def test_c35_static_no_sql_function_passes_data_to_pg_notify(conn: Conn) -> None:
    """
    C35 static check, on the source and on the deployed functions: the only NOTIFY is
    pg_notify('pgflight_ready', <the transaction id>) in _notify_ready (a wake ticket),
    so no user data can reach a payload.
    """
    calls = []
    for path in sorted((ROOT / "sql" / "deploy").rglob("*.sql")):
        if "@" in path.name:  # a definition a later rework replaced (sqitch's <change>@<tag>.sql)
            continue
        code = re.sub(r"--[^\n]*", "", path.read_text())
        code = re.sub(r"\bcomment\s+on\b.*?'\s*;", "", code, flags=re.IGNORECASE | re.DOTALL)
        for m in re.finditer(r"pg_notify\s*\(([^)]*)\)|\bnotify\s+\w+", code, re.IGNORECASE):
            calls.append((path.name, re.sub(r"\s+", " ", m.group(0))))
    ticket = "pg_notify('pgflight_ready', pg_catalog.pg_current_xact_id()"  # the pattern stops at ')'
    assert calls == [("_notify_ready.sql", ticket)], calls
    deployed = conn.execute(
        "select p.proname, p.prosrc from pg_proc p join pg_namespace n on n.oid = p.pronamespace"
        " where n.nspname = 'pgflight' and p.prosrc ~* 'pg_notify|\\mnotify\\M'"
    ).fetchall()
    assert [(name, re.findall(r"pg_notify\s*\([^)]*\)", src)) for name, src in deployed] == [
        ("_notify_ready", [ticket])
    ]


def test_c35_10mb_input_with_63_byte_names_notifies_only_small_payloads(dsn: str, conn: Conn) -> None:
    """
    C35: submit a 10 MB input under a 63-byte recipe name, spawn children with 1 MB inputs and
    63-byte keys, retry and release: every write succeeds and every NOTIFY a listener receives
    carries at most 200 bytes.
    """
    conn.execute("update pgflight.settings set max_input_bytes = 32 * 1024 * 1024")
    setup_engine(conn)
    name = "r" * 63
    listener = psycopg.connect(dsn, autocommit=True)
    try:
        listener.execute("listen pgflight_ready")
        big = {"blob": "x" * (10 * 1024 * 1024)}
        sub = submit(conn, name, big, max_attempts=5, backoff=NO_BACKOFF, submitted_by="s" * 63)
        w = register(conn, "w" * 63)
        held = claim_one(conn, w, 30, [name])
        fail(conn, held, {"message": "m" * 10_000})
        held = claim_one(conn, w, 30, [name])
        children = [
            {"key": f"{i}" * 63, "recipe": name, "input": {"blob": "y" * 1024 * 1024}} for i in range(3)
        ]
        conn.execute(
            "select * from pgflight.spawn_children(%s, %s, %s)",
            [held.attempt_id, held.token, Jsonb(children)],
        )
        kid = claim_one(conn, w, 30, [name])
        assert (
            scalar(conn, "select status from pgflight.release_step(%s, %s)", [kid.attempt_id, kid.token])
            == "released"
        )
        payloads = [n.payload for n in listener.notifies(timeout=1.0)]
    finally:
        listener.close()
    assert step(conn, sub.step_id)["status"] == "awaiting_children"
    assert payloads, "the listener heard the wake-ups"
    assert max(len(p.encode()) for p in payloads) <= 200, [p[:80] for p in payloads]


# --- C41: retries never copy a large input -----------------------------------------------------


def test_c41_retries_of_a_20mb_input_add_a_few_kb(conn: Conn) -> None:
    """C41: three retries of a 20 MB-input step grow attempts + events by a few KB, not by copies."""
    conn.execute("update pgflight.settings set max_input_bytes = 32 * 1024 * 1024")
    setup_engine(conn)
    set_clock(conn, 0)
    sub = submit(conn, "huge", {"blob": "z" * (20 * 1024 * 1024)}, max_attempts=5, backoff=NO_BACKOFF)
    w = register(conn)
    size = (
        "select pg_total_relation_size('pgflight.step_attempts') + pg_total_relation_size('pgflight.events')"
    )
    before = scalar(conn, size)
    for _ in range(3):
        fail(conn, claim_one(conn, w, 30, ["huge"]), {"message": "again"})
    assert len(attempts_of(conn, sub.step_id)) == 4
    grown = scalar(conn, size) - before
    assert grown < 64 * 1024, f"{grown} bytes for 3 retries"


# --- C04: heartbeat lag under a CPU-bound recipe -------------------------------------------------


def _spin(ctx: StepContext) -> dict[str, int]:
    """Pure-Python CPU loop holding the GIL for ctx.input['seconds']."""
    end, n = time.monotonic() + ctx.input["seconds"], 0
    while time.monotonic() < end:
        for _ in range(10_000):
            n += 1
    return {"loops": n}


def test_c04_heartbeat_lag_p99_below_half_the_lease_under_cpu_bound_steps(dsn: str, conn: Conn) -> None:
    """
    C04 (b): two pure-Python CPU loops (5 s each, in the worker's step threads) with lease 2 s.
    Heartbeat lag p99 (the worker's own schedule) stays below lease/2, and so does the lag seen in
    the database: the remaining lease of each running attempt, sampled every 50 ms, never drops
    below lease - interval - lease/2. One attempt each, no reclaim, while the sweep runs throughout.
    """
    lease = 2.0
    db.create_workspace(conn, "w")
    runs = [db.submit_run(conn, "w", "spin", {"seconds": 5.0}) for _ in range(2)]
    remaining: list[float] = []
    reclaimed = 0
    with running_worker(dsn, registry(spin=_spin), concurrency=2, lease_s=lease) as w:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            states = [db.run_status(conn, r.run_id).status for r in runs]
            if all(s == "succeeded" for s in states):
                break
            reclaimed += db.reclaim_expired(conn)
            remaining += [
                r[0]
                for r in conn.execute(
                    "select extract(epoch from lease_expires_at - clock_timestamp())::float8"
                    " from pgflight.step_attempts where status = 'running'"
                ).fetchall()
            ]
            time.sleep(0.05)
        hb = w._heartbeat
        assert hb is not None
        lags, interval = list(hb.lags), hb.interval_s
    history = rows(conn, "select id, step_id, status, reason, error from pgflight.step_attempts order by id")
    assert reclaimed == 0, (history, lags, remaining[-20:])
    assert [db.run_status(conn, r.run_id).status for r in runs] == ["succeeded"] * 2, history
    assert len(history) == 2, history
    assert len(remaining) > 20 and len(lags) >= 3, (len(remaining), lags)
    print(
        f"C04: heartbeat lag p99 {p99(lags):.4f}s max {max(lags):.4f}s;"
        f" min remaining lease {min(remaining):.3f}s"
    )
    assert p99(lags) < lease / 2
    assert min(remaining) > lease - interval - lease / 2


@pytest.mark.parametrize("heartbeat_s", [0.0, -1.0])
def test_c04_non_positive_heartbeat_interval_is_refused(dsn: str, heartbeat_s: float) -> None:
    """C04 (a): a misconfigured heartbeat interval is refused (or clamped into (0, lease/3])."""
    try:
        w = Worker(dsn, registry(spin=_spin), lease_s=3.0, heartbeat_s=heartbeat_s)
    except ValueError:
        return
    assert 0 < w.heartbeat_s <= 1.0, w.heartbeat_s


# --- C38: 16 slots on a pool of 1 ------------------------------------------------------------------


def _slot(ctx: StepContext) -> dict[str, int]:
    """Two effects (each a pooled control call) around a 1 s sleep that holds no connection."""
    ctx.effect("before", lambda: {"i": ctx.input["i"]})
    time.sleep(1.0)
    ctx.effect("after", lambda: {"i": ctx.input["i"]})
    return {"i": ctx.input["i"]}


def _worker_connections(conn: Conn) -> list[tuple[str, str | None]]:
    return [
        (r[0], r[1])
        for r in conn.execute(
            "select application_name, state from pg_stat_activity"
            " where datname = current_database() and application_name like 'pgflight%%'"
        ).fetchall()
    ]


def test_c38_sixteen_slots_on_a_one_connection_pool_all_complete(dsn: str, conn: Conn) -> None:
    """
    C38: one worker, 16 concurrent slots, control pool of 1 (+ the claim connection, the heartbeat
    and the listener): all 16 steps, each making pooled calls mid-body, complete; the worker never
    opens more than 4 connections (+1 transient LISTEN probe) and none is idle in a transaction
    while the bodies sleep.
    """
    db.create_workspace(conn, "w")
    runs = [db.submit_run(conn, "w", "slot", {"i": i}) for i in range(16)]
    peak, in_tx = 0, 0
    with running_worker(dsn, registry(slot=_slot), concurrency=16, pool_size=1, lease_s=6.0):
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            seen = _worker_connections(conn)
            peak = max(peak, len([s for s in seen if not s[0].endswith("probe")]))
            in_tx += sum(1 for s in seen if (s[1] or "").startswith("idle in transaction"))
            if all(db.run_status(conn, r.run_id).status == "succeeded" for r in runs):
                break
            time.sleep(0.1)
    assert [db.run_status(conn, r.run_id).status for r in runs] == ["succeeded"] * 16
    assert scalar(conn, "select count(*) from pgflight.effects") == 32
    assert scalar(conn, "select count(*) from pgflight.step_attempts") == 16, "no slot lost its lease"
    assert peak <= 4, peak
    assert in_tx == 0


# --- C31: many calls through transaction-mode PgBouncer ------------------------------------------


def _bounced_worker_loop(dsn: str, wid: int, until: Callable[[], bool], prepare: bool) -> dict[str, int]:
    """
    One client through the pooler: claim 5 (started), heartbeat them, complete them in a batch, and
    every 4th round first try a stale completion (ZF001, then record_stale_write). Counts what it saw.
    """
    seen = {"calls": 0, "done": 0, "stale_refused": 0, "errors": 0}
    kwargs: dict[str, Any] = {} if prepare else {"prepare_threshold": None}
    with psycopg.connect(dsn, autocommit=True, **kwargs) as c:
        rounds = 0
        while not until():
            rounds += 1
            try:
                got = db.claim_batch(c, wid, batch_size=5, lease_s=30, recipes=["noop"], start=True)
                seen["calls"] += 1
                if not got:
                    continue
                db.heartbeat(c, wid, [g.attempt_id for g in got], [g.fencing_token for g in got])
                seen["calls"] += 1
                if rounds % 4 == 0:
                    try:
                        db.complete_step(c, got[0].attempt_id, got[0].fencing_token - 1, {"stale": True})
                    except errors.LeaseLost:
                        seen["stale_refused"] += 1
                    seen["calls"] += 2
                outcomes = db.complete_batch(
                    c, [g.attempt_id for g in got], [g.fencing_token for g in got], [None] * len(got)
                )
                seen["calls"] += 2
                seen["done"] += sum(o.outcome == "succeeded" for o in outcomes)
            except psycopg.Error:
                seen["errors"] += 1
                if c.closed:
                    break
    return seen


def _bounced_storm(
    conn: Conn, bounced: str, n_steps: int, n_clients: int, *, prepare: bool, budget_s: float
) -> dict[str, int]:
    """`n_clients` threads of _bounced_worker_loop until `n_steps` noop steps are done or `budget_s` ends."""
    submit_many(conn, n_steps, "noop", "w")
    wids = [register(conn, f"b{i}") for i in range(n_clients)]
    stop_at = time.monotonic() + budget_s

    def until() -> bool:
        left = scalar(conn, "select count(*) from pgflight.step_attempts where status <> 'succeeded'")
        return left == 0 or time.monotonic() > stop_at

    totals = {"calls": 0, "done": 0, "stale_refused": 0, "errors": 0}
    results: list[dict[str, int]] = []
    threads = [
        threading.Thread(
            target=lambda wid=wid: results.append(_bounced_worker_loop(bounced, wid, until, prepare))
        )
        for wid in wids
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    for r in results:
        for k in totals:
            totals[k] += r[k]
    return totals


def test_c31_20_clients_through_transaction_pgbouncer_without_prepared_statements(
    conn: Conn,
    dsn: str,
    pgbouncer: str,
) -> None:
    """
    C31 at moderate scale: 20 clients with the recommended prepare_threshold=None share 3 server
    connections of a transaction-mode PgBouncer for about 3,000 steps (claim, heartbeat,
    complete_batch, plus refused stale completions that abort their transaction): zero errors,
    every step succeeded once, no `idle in transaction (aborted)` server connection afterwards.
    The driver default (server-side prepared statements) is run too, to show the test bites.
    """
    db.create_workspace(conn, "w")
    bounced = make_conninfo(dsn, host="127.0.0.1", port=int(pgbouncer.split("port=")[1]))
    t0 = time.monotonic()
    ok = _bounced_storm(conn, bounced, 3000, 20, prepare=False, budget_s=60)
    elapsed = time.monotonic() - t0
    print(f"C31: {ok} in {elapsed:.1f}s")
    assert ok["errors"] == 0, ok
    assert ok["done"] == 3000 and ok["stale_refused"] > 0, ok
    assert scalar(conn, "select count(*) from pgflight.step_attempts where status <> 'succeeded'") == 0
    assert scalar(conn, "select count(*) from pgflight.run_events where reason = 'succeeded'") == 3000
    assert (
        scalar(conn, "select count(*) from pg_stat_activity where state = 'idle in transaction (aborted)'")
        == 0
    )
    conn.execute("delete from pgflight.runs")
    default = _bounced_storm(conn, bounced, 300, 8, prepare=True, budget_s=2)
    print(f"C31 with the driver default: {default}")
    assert default["errors"] > 0, "server-side prepared statements collide behind the pooler"


# --- invariant 10: an audit after a chaotic mixed run ---------------------------------------------

TOLERATED = {"ZF001", "ZF002", "ZF006"}  # stale token, cancelled, not terminal (retry/replay too early)


class Chaos:
    """
    A seeded, chaotic mixed workload on the fake clock: fan-out (some fail_fast), successes,
    retryable and fatal failures, releases, cancels of runs and steps, lease expiries with the
    reclaim sweep, retries of dead letters, replays, and writes racing on two connections.
    Stale holders keep their claims, so late writes happen too.
    """

    def __init__(self, main: Conn, conns: list[Conn], seed: int) -> None:
        self.main, self.conns = main, conns
        self.rnd = random.Random(seed)
        self.now = 0.0
        self.workers = [register(main, f"chaos{i}") for i in range(len(conns))]
        self.held: list[tuple[int, Claim]] = []
        self.refused: dict[str, int] = {}
        self.tick(0)

    def tick(self, dt: float) -> None:
        self.now += dt
        for c in (self.main, *self.conns):
            set_clock(c, self.now)

    def guarded(self, fn: Callable[[], Any], conn: Conn | None = None, c: Claim | None = None) -> Any:
        """Run a write; a tolerated refusal is counted and, for a fenced write, logged as a client does."""
        try:
            return fn()
        except psycopg.Error as e:
            if e.sqlstate not in TOLERATED:
                raise
            self.refused[str(e.sqlstate)] = self.refused.get(str(e.sqlstate), 0) + 1
            if conn is not None and c is not None:
                conn.execute("select pgflight.record_stale_write(%s, %s, 'chaos')", [c.attempt_id, c.token])
            return None

    def submit(self, n: int) -> None:
        for i in range(n):
            recipe = "fan" if i % 3 == 0 else "leaf"
            submit(self.main, recipe, {"i": i}, max_attempts=3, backoff={"base_s": 1, "jitter": 0})

    def claim(self, i: int, n: int) -> list[Claim]:
        got = claim(self.conns[i], self.workers[i], n, 30)
        self.held += [(i, g) for g in got]
        return got

    def finish(self, i: int, c: Claim, *, chaotic: bool = True) -> None:
        """The holder's next write: spawn (a fan step without children), else complete/fail/release."""
        rng = random.Random(self.rnd.random())  # drawn here, so racing finishes stay reproducible
        conn = self.conns[i]
        recipe, kids = self.main.execute(
            "select s.recipe, (select count(*) from pgflight.steps k where k.parent_id = s.id)"
            " from pgflight.steps s where s.id = %s",
            [c.step_id],
        ).fetchone() or (None, 0)
        r = rng.random() if chaotic else 0.0
        if recipe == "fan" and kids == 0:
            keys = [f"k{j}" for j in range(rng.randint(1, 4))]
            child = "fan" if rng.random() < 0.2 else "leaf"
            fail_fast = rng.random() < 0.3
            self.guarded(lambda: spawn(conn, c, keys, child, fail_fast=fail_fast), conn, c)
        elif r < 0.6:
            self.guarded(lambda: complete(conn, c, {"by": i}), conn, c)
        elif r < 0.85:
            self.guarded(lambda: fail(conn, c, {"message": "transient"}), conn, c)
        elif r < 0.9:
            self.guarded(lambda: fail(conn, c, {"message": "fatal"}, retryable=False), conn, c)
        else:
            self.guarded(
                lambda: conn.execute("select * from pgflight.release_step(%s, %s)", [c.attempt_id, c.token]),
                conn,
                c,
            )

    def pick(self, query: str) -> int | None:
        ids = [r[0] for r in self.main.execute(query).fetchall()]
        return self.rnd.choice(ids) if ids else None

    def step_once(self) -> None:
        r = self.rnd.random()
        i = self.rnd.randrange(len(self.conns))
        if r < 0.3:
            self.claim(i, self.rnd.randint(1, 4))
        elif r < 0.6 and self.held:
            j, c = self.held.pop(self.rnd.randrange(len(self.held)))
            self.finish(j, c)
        elif r < 0.7 and len(self.held) >= 2:
            (j, c), (k, d) = self.rnd.sample(self.held, 2)
            self.held = [h for h in self.held if h[1] not in (c, d)]
            if j == k:
                k = (j + 1) % len(self.conns)
            first, second = (lambda: self.finish(j, c)), (lambda: self.finish(k, d))
            run_parallel([first, second])
        elif r < 0.75:
            mine = [c for j, c in self.held if j == i]
            heartbeat(self.conns[i], self.workers[i], mine)
        elif r < 0.78:
            run = self.pick("select id from pgflight.runs where status = 'running'")
            if run is not None:
                cancel_run(self.main, run)
        elif r < 0.81:
            kid = self.pick(
                "select step_id from pgflight.step_status where parent_id is not null and status in"
                " ('queued', 'claimed', 'running', 'awaiting_children')"
            )
            if kid is not None:
                self.main.execute("select * from pgflight.cancel_step(%s, 'chaos')", [kid])
        elif r < 0.86:
            self.tick(31)
            reclaim(self.main)
        elif r < 0.89:
            dead = self.pick("select step_id from pgflight.dead_letters")
            if dead is not None:
                self.guarded(lambda: self.main.execute("select pgflight.retry_step(%s)", [dead]))
        elif r < 0.91:
            done = self.pick(
                "select step_id from pgflight.step_status"
                " where status = 'succeeded' and parent_id is not null"
            )
            if done is not None:
                self.guarded(lambda: self.main.execute("select pgflight.replay_from(%s)", [done]))
        else:
            self.main.execute("select * from pgflight.run_sweeps()")
        self.tick(1)

    def drain(self, max_rounds: int = 300) -> int:
        """Expire every lease, sweep, and complete whatever is claimable until every run has ended."""
        for n in range(max_rounds):
            if not scalar(self.main, "select count(*) from pgflight.runs where status = 'running'"):
                return n
            self.tick(31)
            self.main.execute("select * from pgflight.run_sweeps()")
            self.held = []
            for c in self.claim(0, 200):
                self.finish(0, c, chaotic=False)
        raise AssertionError("the workload did not drain")


def test_inv10_audit_after_a_chaotic_mixed_run(bare: Conn, connect: ConnectFactory) -> None:
    """
    Invariant 10 after 500 chaotic operations on 3 connections and a drain: every run ended; every
    step of a finished run terminal; no live attempt under a terminal run; no queued attempt at the
    ceiling; each ended attempt has exactly one terminal event and its last event agrees with it;
    never succeeded after cancelled; no step succeeded twice (replays aside); run_audit agrees.
    """
    seed = int(os.environ.get("PGFLIGHT_CHAOS_SEED", "20300101"))
    chaos = Chaos(bare, [connect(20) for _ in range(3)], seed=seed)
    chaos.submit(60)
    for _ in range(500):
        chaos.step_once()
    rounds = chaos.drain()
    print(f"inv10 chaos (seed {seed}): drained in {rounds} rounds; refused writes {chaos.refused}")
    assert audit(bare) == {}
    assert invariant_violations(bare) == {}
    unfinished = bare.execute(
        "select r.id, a.steps_unfinished from pgflight.runs r, pgflight.run_audit(r.id) a"
        " where a.steps_unfinished <> 0"
    ).fetchall()
    assert unfinished == []
    kinds = {k for r in bare.execute("select distinct reason, to_status from pgflight.run_events") for k in r}
    wanted = {
        "lease_expired",
        "dead_letter",
        "cancelled",
        "parent_resumed",
        "stale_result_rejected",
        "released",
        "child_failed",
        "retried",
        "replayed",
        "retry_scheduled",
        "children_spawned",
    }
    if "PGFLIGHT_CHAOS_SEED" not in os.environ:  # the default seed really takes every path
        assert wanted <= kinds, sorted(wanted - kinds)
