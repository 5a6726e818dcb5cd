"""
Attacks on ``pgflight.complete_and_claim`` (a batch's completions and the claim of the slots they
free in one call), on real PostgreSQL with several real connections and real logins.

- ``pgflight.complete_and_claim`` as a stored function: the trust boundary (a login that is not
  the worker's, a stolen token, a lane on another workspace, a login outside the worker lane),
  atomicity when the completion half is refused after the claim half ran, and its lock order
  against a heartbeat and a cancel.
- ``--prepared-statements auto`` behind PgBouncer in transaction mode: nothing prepared.

Two rules these attacks keep (the tests marked FOUND failed before them): two claims of one worker
id never deadlock on claim_batch's FOR SHARE read of the worker row (40P01), because the renewal
of last_seen_at skips a row another session holds; and a combined claim still on the server past
the shutdown's settle wait leaves no step running under the stopped worker, because
deregister_worker releases every lease the worker still holds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from attack_support import registry, running_worker, wait_until
from core_helpers import (
    Conn,
    backend_pid,
    claim,
    register,
    rows,
    scalar,
    set_clock,
    submit_many,
    wait_blocked_or_done,
)
from pgflight.db import connection
from pgflight.worker import Worker
from security_support import World, grant, snapshot
from test_security_attacks import as_login, su  # noqa: F401  (fixtures)
from test_worker_connections import pgbouncer  # noqa: F401  (fixture)

ConnectFactory = Callable[..., Conn]
COMPLETE_AND_CLAIM = (
    "select attempt_id, fencing_token, outcome from pgflight.complete_and_claim(%s, %s, %s, %s, %s, 30)"
)


def _cac(conn: Conn, worker: int, held: list[tuple[int, int]], batch: int = 2) -> list[Any]:
    """complete_and_claim: complete `held` (attempt, token) with {"ok": i}; claim up to `batch`."""
    return conn.execute(
        COMPLETE_AND_CLAIM,
        [
            worker,
            [a for a, _ in held],
            [t for _, t in held],
            [Jsonb({"ok": i}) for i in range(len(held))],
            batch,
        ],
    ).fetchall()


def _sqlstate(fn: Callable[[], Any]) -> str | None:
    try:
        fn()
    except psycopg.Error as e:
        return e.sqlstate
    return None


# --- the trust boundary ---------------------------------------------------------------------


def test_a_stolen_token_in_the_completion_half_is_lease_lost_and_writes_nothing_of_the_victim(
    su: Conn,
    as_login: Callable[[str], Conn],
) -> None:
    """A login with its own live worker sends another login's (attempt, token) to complete: that
    row answers lease_lost (as an unknown attempt) and the victim's attempt is untouched; the
    claim half leases the ready step as it would have anyway."""
    for login in ("pgf_worker_a", "pgf_worker_b"):
        grant(su, login, "A", "worker")
    victim = World(su=su, me=as_login("pgf_worker_a"), workspace="A")
    victim.worker_id = int(victim.me.execute("select pgflight.register_worker('victim')").fetchone()[0])  # type: ignore[index]
    held = victim.held()
    ready = victim.submit()  # ready: the thief's claim half leases it
    thief = as_login("pgf_worker_b")
    thief_worker = int(thief.execute("select pgflight.register_worker('thief')").fetchone()[0])  # type: ignore[index]
    theirs = "select status, result, fencing_token from pgflight.step_attempts where id = %s"
    before = su.execute(theirs, [held["attempt_id"]]).fetchone()
    got = _cac(thief, thief_worker, [(held["attempt_id"], held["token"])])
    assert [(r[0], r[2]) for r in got if r[2] is not None] == [(held["attempt_id"], "lease_lost")]
    assert [r[0] for r in got if r[2] is None] == [ready["attempt_id"]]
    assert su.execute(theirs, [held["attempt_id"]]).fetchone() == before


def test_another_logins_worker_id_is_refused_before_anything_is_completed(
    su: Conn,
    as_login: Callable[[str], Conn],
) -> None:
    """The victim's worker id from another login: ZF010 from the claim half; nothing written."""
    for login in ("pgf_worker_a", "pgf_worker_b"):
        grant(su, login, "A", "worker")
    victim = World(su=su, me=as_login("pgf_worker_a"), workspace="A")
    victim.worker_id = int(victim.me.execute("select pgflight.register_worker('victim')").fetchone()[0])  # type: ignore[index]
    victim.submit()
    thief = as_login("pgf_worker_b")
    before = snapshot(su)
    assert _sqlstate(lambda: _cac(thief, victim.worker_id or 0, [])) == "ZF010"
    assert snapshot(su) == before


def test_a_lane_on_one_workspace_claims_nothing_of_another(
    su: Conn,
    as_login: Callable[[str], Conn],
) -> None:
    """A worker granted workspace B only: complete_and_claim's claim half leases nothing of A."""
    grant(su, "pgf_worker_b", "B", "worker")
    World(su=su, me=su, workspace="A").submit()
    me = as_login("pgf_worker_b")
    w = int(me.execute("select pgflight.register_worker('b')").fetchone()[0])  # type: ignore[index]
    assert _cac(me, w, [], batch=10) == []
    World(su=su, me=su, workspace="B").submit()
    got = _cac(me, w, [], batch=10)
    assert len(got) == 1 and got[0][2] is None


@pytest.mark.parametrize("login", ["pgf_operator_a", "pgf_reader_a"])
def test_only_the_worker_lane_may_call_it(
    su: Conn,
    as_login: Callable[[str], Conn],
    login: str,
) -> None:
    """An operator or a reader login cannot execute complete_and_claim at all (42501)."""
    grant(su, login, None, "operator" if "operator" in login else "reader")
    me = as_login(login)
    assert _sqlstate(lambda: _cac(me, 1, [])) == "42501"


# --- atomicity and lock order ---------------------------------------------------------------


def test_a_completion_over_the_result_cap_fails_alone_and_the_claim_is_kept(eng: Conn) -> None:
    """A result over settings.max_result_bytes is not a refusal of the call: that step fails
    (result_refused, dead letter), its neighbour succeeds, and the claim half's steps stay leased
    (claimed, as claim_batch leaves them without the start option)."""
    w = register(eng)
    submit_many(eng, 4, "a")
    got = claim(eng, w, 2, 30)
    eng.execute("update pgflight.settings set max_result_bytes = 64")
    out = eng.execute(
        COMPLETE_AND_CLAIM,
        [
            w,
            [g.attempt_id for g in got],
            [g.token for g in got],
            [Jsonb({"ok": 1}), Jsonb({"big": "x" * 100})],
            2,
        ],
    ).fetchall()
    assert [o for _, _, o in out if o is not None] == ["succeeded", "result_refused"]
    claimed = [a for a, t, o in out if o is None]
    assert len(claimed) == 2
    statuses = rows(eng, "select id, status from pgflight.step_attempts where id = any(%s)", [claimed])
    assert {r["status"] for r in statuses} == {"claimed"}


def test_heartbeats_and_combined_calls_of_one_worker_never_deadlock(
    eng: Conn, connect: ConnectFactory
) -> None:
    """The heartbeat (an update of the worker row, then attempts) against complete_and_claim (the
    row FOR SHARE and its last_seen_at update, then attempts), on two connections, 150 rounds,
    last_seen_at a second old before each so that every claim half writes it."""
    w = register(eng)
    submit_many(eng, 400, "a")
    a, b = connect(10), connect(10)
    for c in (a, b):
        set_clock(c, 0)
    held = [(c.attempt_id, c.token) for c in claim(a, w, 2, 30)]
    errors: list[str] = []
    stop = threading.Event()
    current = [held]

    def beat() -> None:
        while not stop.is_set():
            ids, toks = [x for x, _ in current[0]], [t for _, t in current[0]]
            try:
                b.execute("select * from pgflight.heartbeat(%s, %s, %s)", [w, ids, toks]).fetchall()
            except psycopg.Error as e:
                errors.append(f"heartbeat {e.sqlstate}")

    t = threading.Thread(target=beat, daemon=True)
    t.start()
    try:
        for _ in range(150):
            eng.execute(
                "update pgflight.workers set last_seen_at = last_seen_at - interval '2 s' where id = %s", [w]
            )
            try:
                out = _cac(a, w, current[0])
            except psycopg.Error as e:
                errors.append(f"complete_and_claim {e.sqlstate}")
                break
            current[0] = [(x, tok) for x, tok, o in out if o is None]
            if not current[0]:
                break
    finally:
        stop.set()
        t.join(10)
    assert errors == []


def test_two_claims_of_one_worker_id_both_holding_the_share_lock_do_not_deadlock(
    eng: Conn, connect: ConnectFactory
) -> None:
    """
    FOUND (claim_batch's FOR SHARE; the fix: the renewal takes the row FOR NO KEY UPDATE SKIP
    LOCKED first and skips it when another session holds it): without the fix, two
    claims of one worker id, each past its FOR SHARE read of the worker row while last_seen_at
    is a second old, both go on to update last_seen_at. Each update waits for the other's share
    lock: PostgreSQL detects the deadlock and fails one claim with 40P01 after deadlock_timeout
    (1 s by default). A worker in another language that claims from two connections with one
    worker id (the README invites any language to call claim_batch) loses a claim and a second
    each time. A third session holding the row FOR SHARE for a moment (here the test; in life,
    any third claim of the same id) lines the two up deterministically. A read of the row
    without a lock would let the two updates queue instead.
    """
    w = register(eng)
    submit_many(eng, 10, "a")
    eng.execute(
        "update pgflight.workers set last_seen_at = last_seen_at - interval '1 minute' where id = %s", [w]
    )
    holder = connect(20, autocommit=False)
    holder.execute("select 1 from pgflight.workers where id = %s for share", [w])
    c1, c2 = connect(20), connect(20)
    for c in (c1, c2):
        set_clock(c, 0)
    with ThreadPoolExecutor(2) as pool:
        # each claim in turn, until it waits on the holder's lock (the old shape) or ends (the
        # fixed one, which skips the renewal while another session holds the row)
        f1 = pool.submit(lambda: _sqlstate(lambda: claim(c1, w, 2, 30)))
        wait_blocked_or_done(eng, backend_pid(c1), f1)
        f2 = pool.submit(lambda: _sqlstate(lambda: claim(c2, w, 2, 30)))
        wait_blocked_or_done(eng, backend_pid(c2), f2)
        holder.rollback()
        codes = [f1.result(30), f2.result(30)]
    assert codes == [None, None], f"a claim failed: {codes} (40P01: deadlock detected)"
    assert scalar(eng, "select count(*) from pgflight.step_attempts where status = 'claimed'") == 4


# --- prepared statements ----------------------------------------------------------------------


def test_auto_prepares_nothing_behind_a_transaction_pooler(dsn: str, conn: Conn, pgbouncer: str) -> None:
    """--prepared-statements auto with the DSN through PgBouncer (transaction mode, pool of 3):
    the LISTEN probe fails, so neither the pools nor the listener prepare; 200 steps run."""
    from psycopg.conninfo import make_conninfo

    bounced = make_conninfo(dsn, host="127.0.0.1", port=int(pgbouncer.split("port=")[1]))
    conn.execute("select pgflight.create_workspace('core')")
    submit_many(conn, 200, "noop")

    def noop(ctx: Any) -> dict[str, int]:
        return {"ok": 1}

    with running_worker(bounced, registry(noop=noop), concurrency=8, prepared_statements="auto") as w:
        wait_until(
            lambda: (
                scalar(conn, "select count(*) from pgflight.step_attempts where status = 'succeeded'") == 200
            ),
            120,
            "200 steps through the pooler",
        )
        assert not w.prepared
        assert w.listening is False
    assert scalar(conn, "select count(*) from pgflight.step_attempts where status <> 'succeeded'") == 0


def test_a_migration_changing_complete_and_claims_columns_mid_burn_down_stops_nothing(
    conn: Conn, dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """
    The stale plan path with a real worker: prepared statements on (a direct DSN, auto), a
    burn-down under way (the completer sends complete_and_claim, prepared on its connection),
    then a migration replaces complete_and_claim with another result type (step_key varchar: the
    client reads it as before). The prepared call fails with 0A000 (cached plan must not change
    result type) on each connection that had it; the worker replaces the connection, completes
    the batch alone and goes on: every step succeeds, none is retried, the worker stays up.
    """
    conn.execute("select pgflight.create_workspace('core')")
    submit_many(conn, 3000, "noop")
    stale: list[str] = []
    real = connection.is_stale_prepared

    def seen(exc: BaseException) -> bool:
        if real(exc):
            stale.append(str(exc).splitlines()[0])
            return True
        return False

    monkeypatch.setattr(connection, "is_stale_prepared", seen)

    def noop(ctx: Any) -> dict[str, int]:
        return {"ok": 1}

    definition = scalar(
        conn,
        "select pg_get_functiondef(p.oid) from pg_proc p"
        " where p.proname = 'complete_and_claim' and p.pronamespace = 'pgflight'::regnamespace",
    )
    changed = (
        definition.replace("step_key text", "step_key character varying")
        .replace("c.step_key, c.attempt_no", "c.step_key::varchar, c.attempt_no")
        .replace("null::text, null::integer", "null::varchar, null::integer")
    )
    assert changed != definition
    done = "select count(*) from pgflight.step_attempts where status = 'succeeded'"
    with running_worker(dsn, registry(noop=noop), concurrency=8, prepared_statements="auto") as w:
        wait_until(lambda: w.combined_claims >= 20 and w.prepared, 60, "prepared combined calls")
        conn.execute("begin")
        conn.execute(
            "drop function pgflight.complete_and_claim(bigint, bigint[], bigint[], jsonb[], integer,"
            " double precision, text[], jsonb)"
        )
        conn.execute(changed)
        conn.execute(
            "grant execute on function pgflight.complete_and_claim(bigint, bigint[], bigint[], jsonb[],"
            " integer, double precision, text[], jsonb) to pgflight_worker"
        )
        conn.execute("commit")
        wait_until(lambda: scalar(conn, done) == 3000, 180, "the burn-down to finish after the migration")
        before = w.combined_claims
        submit_many(conn, 300, "noop")
        wait_until(lambda: scalar(conn, done) == 3300, 60, "a second burn-down on the new function")
        assert w.combined_claims > before, "the new complete_and_claim is used again"
    assert stale, "the migration made no prepared statement stale: the test tested nothing"
    assert scalar(conn, "select count(*) from pgflight.step_attempts where attempt_no > 1") == 0


# --- Worker._claims_settled at shutdown -------------------------------------------------------


def test_a_combined_claim_blocked_past_the_settle_wait_leaves_no_step_leased_to_the_stopped_worker(
    eng: Conn, dsn: str, connect: ConnectFactory
) -> None:
    """
    FOUND (Worker._claims_settled; the fix: deregister_worker
    releases every lease the worker still holds, no attempt spent): a worker is stopped while
    its completer's complete_and_claim waits on the server (here: the test holds the worker row
    FOR UPDATE, as a long transaction on the row would) for longer than the shutdown's settle
    wait (max(grace, 5 s)). Whatever that claim commits once it gets the row must still be run
    or released: no attempt may stay leased (claimed or running) to the worker once it has
    stopped and deregistered, where only the lease's expiry (an attempt spent) would free it.
    Without the fix: the settle wait gives up after 5 s, the worker deregisters (its UPDATE queues behind
    the claim's share lock), the claim commits first, and its steps stay `running` under the
    stopped worker until their lease lapses.
    """
    set_clock(eng, None)
    submit_many(eng, 400, "slow")

    def slow(ctx: Any) -> dict[str, int]:
        time.sleep(0.05)
        return {"ok": 1}

    holder = connect(30, autocommit=False)
    reg = registry(slow=slow)
    w = Worker(dsn, reg, concurrency=4, batch_size=4, poll_s=0.2, grace_s=0.5, lease_s=60)
    t = threading.Thread(target=w.run, daemon=True)
    t.start()
    try:
        wait_until(lambda: w.combined_claims >= 3, 60, "the completer's combined claims under the backlog")
        blocked = None
        for _ in range(40):  # until the statement stuck behind the row lock is the combined one
            holder.execute("select 1 from pgflight.workers where id = %s for update", [w.worker_id])
            time.sleep(0.5)
            waiting = [
                r["query"]
                for r in rows(
                    eng,
                    "select query from pg_stat_activity where datname = current_database()"
                    " and wait_event_type = 'Lock' and pid <> pg_backend_pid()",
                )
            ]
            if any("complete_and_claim" in q for q in waiting) and not any(
                "claim_batch" in q for q in waiting
            ):
                blocked = waiting
                break
            holder.rollback()
            time.sleep(0.2)
        assert blocked, "never caught the combined statement alone behind the row lock"
        w.stop()
        time.sleep(7)  # past the settle wait of max(grace 0.5, 5) s
        holder.rollback()
        t.join(30)
        assert not t.is_alive()
    finally:
        w.stop()
        holder.rollback()
        t.join(30)
    leased = rows(
        eng,
        "select a.id, a.status from pgflight.step_attempts a join pgflight.workers k on k.id = a.worker_id"
        " where k.stopped_at is not null and a.status in ('claimed', 'running')",
    )
    history = [
        rows(
            eng,
            "select e.id, e.reason, e.to_status, e.at, k.stopped_at from pgflight.run_events e"
            " join pgflight.step_attempts a on a.id = e.attempt_id"
            " join pgflight.workers k on k.id = a.worker_id"
            " where e.attempt_id = %s order by e.id",
            [r["id"]],
        )
        for r in leased
    ]
    assert leased == [], f"attempts left leased to the stopped worker: {leased}; their events: {history}"
