"""
A large reclaim's retries are queued without row triggers: a batch of at
least 500 retries inserts its successor attempts with session_replication_role = replica, so their
foreign key check (step_attempts_step_id_fkey, one SPI query per row) does not run, as submit_runs'
and purge_finished's bulk writes (internals/_row_triggers).

What the skipped check protected: a queued attempt of a step that does not exist. These tests hold
what replaces it: the lapsed attempts' update keeps its triggers (the caps' slots come back), the
setting is back to origin as soon as the insert is done (the keys hold for what follows), a step
deleted while the reclaim holds it waits and then takes its new attempt with it, a step being
deleted is skipped; without the grant, or below 500, every trigger fires as before.
"""

from __future__ import annotations

import psycopg
import pytest
from psycopg.types.json import Jsonb

from conftest import ConnectFactory
from core_helpers import (
    WORKSPACE,
    Conn,
    claim,
    invariant_violations,
    race,
    reclaim,
    register,
    scalar,
    set_clock,
    setup_engine,
    submit_many,
)

LARGE = 600  # at least the 500 from which the retries' insert runs without row triggers
ORPHANS = (
    "select count(*) from pgflight.step_attempts a"
    " where not exists (select from pgflight.steps s where s.id = a.step_id)"
)
QUEUED = "select count(*) from pgflight.step_attempts where status = 'queued'"


def _crash(conn: Conn, n: int, *, cap: int | None = None) -> int:
    """`n` runs leased to one worker (a workspace cap of `cap`), their leases lapsed; return the worker."""
    setup_engine(conn)
    if cap is not None:
        limits = Jsonb({"max_in_flight": cap})
        conn.execute("select pgflight.set_workspace_limits(%s, %s)", [WORKSPACE, limits])
    set_clock(conn, 0)
    w = register(conn)
    submit_many(conn, n, "crash", max_attempts=3, backoff={"base_s": 0, "jitter": 0})
    got = 0
    while got < n:
        batch = claim(conn, w, min(500, n - got), 1, ["crash"])
        assert batch, f"only {got} of {n} claimable"
        got += len(batch)
    set_clock(conn, 3600)
    return w


def _audit_inserts(conn: Conn) -> None:
    """A DBA's own AFTER INSERT row trigger on step_attempts, counting into public.audit."""
    conn.execute("create table public.audit (attempt_id bigint)")
    conn.execute(
        "create function public.audit() returns trigger language plpgsql security definer as"
        " $$ begin insert into public.audit values (new.id); return null; end $$"
    )
    conn.execute(
        "create trigger audit after insert on pgflight.step_attempts"
        " for each row execute function public.audit()"
    )


def test_a_large_reclaim_queues_its_retries_without_row_triggers_and_keeps_the_updates(
    conn: Conn, connect: ConnectFactory
) -> None:
    """
    LARGE retries: the successors fire no row trigger (the DBA's audit sees none of them), while the
    lapsed attempts' update triggers still return the cap's slots (every retry claimable again under a
    full cap); session_replication_role is origin again inside the same transaction and the foreign
    key refuses an attempt of no step there. A reclaim of fewer than 500 fires every trigger.
    """
    w = _crash(conn, LARGE, cap=LARGE)
    _audit_inserts(conn)
    a = connect(timeout_s=60, autocommit=False)
    set_clock(a, 3600)
    assert reclaim(a, 1000) == LARGE
    assert a.execute("show session_replication_role").fetchone() == ("origin",)
    a.execute("savepoint s")
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        a.execute(
            "insert into pgflight.step_attempts (step_id, run_id, attempt_no, recipe, available_after,"
            " workspace_id) values (-1, -1, 1, 'r', now(), 1)"
        )
    a.execute("rollback to savepoint s")
    a.commit()
    assert scalar(conn, "select count(*) from public.audit") == 0
    assert scalar(conn, QUEUED) == LARGE
    assert scalar(conn, ORPHANS) == 0
    # the cap (LARGE in flight) was full: only the slots the lapsed attempts gave back let these claim
    assert sum(len(claim(conn, w, 500, 1, ["crash"])) for _ in range(3)) == LARGE
    assert invariant_violations(conn) == {}

    set_clock(conn, 7200)
    assert reclaim(conn, 100) == 100  # below 500: the checks and the DBA's trigger run
    assert scalar(conn, "select count(*) from public.audit") == 100


def test_without_the_grant_a_large_reclaim_keeps_every_row_trigger(conn: Conn) -> None:
    """
    A deploy by a non-superuser leaves pgflight_owner unable to set session_replication_role: the
    retries are then inserted with their checks and every trigger, as before (the DBA's audit sees
    each one).
    """
    _crash(conn, LARGE)
    _audit_inserts(conn)
    # parameter privileges are cluster-wide: the revoke stays inside a transaction that is rolled
    # back, so tests of other databases running meanwhile never see it
    with conn.transaction(force_rollback=True):
        conn.execute("revoke set on parameter session_replication_role from pgflight_privileged")
        assert reclaim(conn, 1000) == LARGE
        assert scalar(conn, "select count(*) from public.audit") == LARGE
    assert reclaim(conn, 1000) == LARGE
    assert scalar(conn, "select count(*) from public.audit") == 0


def test_a_step_deleted_while_the_reclaim_holds_it_takes_its_new_attempt_with_it(
    conn: Conn, connect: ConnectFactory
) -> None:
    """
    A DBA deletes a run (its steps and attempts cascade) while a large reclaim holds that run's step:
    the delete waits for the reclaim's commit and then removes the queued successor too, so no
    attempt names a step that does not exist.
    """
    _crash(conn, LARGE)
    victim = int(scalar(conn, "select min(run_id) from pgflight.step_attempts"))
    a, b = connect(timeout_s=60), connect(timeout_s=60)
    set_clock(a, 3600)
    got, deleted, waited = race(
        lambda: reclaim(a, 1000),
        a,
        lambda: b.execute("delete from pgflight.runs where id = %s", [victim]).rowcount,
        b,
        order="a_then_b",
        observer=conn,
    )
    assert (got.value, deleted.value, waited) == (LARGE, 1, True)
    assert scalar(conn, "select count(*) from pgflight.step_attempts where run_id = %s", [victim]) == 0
    assert scalar(conn, ORPHANS) == 0
    assert scalar(conn, QUEUED) == LARGE - 1


def test_a_step_being_deleted_is_skipped_and_gets_no_new_attempt(conn: Conn, connect: ConnectFactory) -> None:
    """
    The other order: a DBA's delete of a run holds its step and lapsed attempt (uncommitted) when the
    reclaim comes: the reclaim skips that lease (SKIP LOCKED), queues every other retry, and after the
    delete commits nothing of that run is left, no orphan anywhere.
    """
    _crash(conn, LARGE + 1)
    victim = int(scalar(conn, "select min(run_id) from pgflight.step_attempts"))
    b = connect(timeout_s=60, autocommit=False)
    b.execute("delete from pgflight.runs where id = %s", [victim])
    a = connect(timeout_s=60)
    a.execute("set lock_timeout = 0")  # no timeout: only SKIP LOCKED can keep it from waiting
    set_clock(a, 3600)
    assert reclaim(a, 1000) == LARGE
    b.commit()
    assert reclaim(a, 1000) == 0
    assert scalar(conn, "select count(*) from pgflight.step_attempts where run_id = %s", [victim]) == 0
    assert scalar(conn, ORPHANS) == 0
    assert scalar(conn, QUEUED) == LARGE


def test_a_large_batch_that_raises_in_its_insert_is_redone_row_by_row_with_every_trigger(conn: Conn) -> None:
    """
    The successors' insert raises under replica (the first new id taken by an existing attempt): the
    batch is rolled back with the setting, and the row-by-row path that redoes it runs with every
    trigger and check (the DBA's audit sees each successor), so a lease is never retried unchecked
    outside the batch's one insert.
    """
    _crash(conn, LARGE)
    _audit_inserts(conn)
    taken = int(scalar(conn, "select max(id) from pgflight.step_attempts"))
    conn.execute("select setval('pgflight.step_attempts_id_seq', %s)", [taken - 1])
    with conn.transaction():
        # the whole batch row by row in one call: no time budget (it leaves the rest otherwise)
        conn.execute("select set_config('pgflight.reclaim_budget_ms', '600000', true)")
        assert reclaim(conn, 1000) == LARGE
        assert conn.execute("show session_replication_role").fetchone() == ("origin",)
    assert scalar(conn, "select count(*) from public.audit") == LARGE
    assert scalar(conn, QUEUED) == LARGE
    assert scalar(conn, ORPHANS) == 0
    assert invariant_violations(conn) == {}
