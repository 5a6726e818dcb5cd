"""
Attacks on the hot path's batching and liveness rules, on real PostgreSQL.

- ``db.complete_and_claim``: claim_batch and complete_batch in one statement. Atomic when the
  server refuses a result, for an unknown worker and when the connection is lost mid-statement;
  no deadlock against the worker's heartbeat.
- ``workers.last_seen_at`` written by a claim at most once a second: a worker that only claims
  stays alive in every reader; a claim racing ``deregister_worker`` waits for it and leases
  nothing to the stopped worker.
- the worker's far-deadline rule (no timer past 7 days): the server's sweep ends the overrun
  attempt and the worker frees its slot; nothing else does.
- ``_complete_many``'s one-statement path for a batch of roots: batches mixing roots and children,
  a cancel racing the completion (C26), an attempt given twice, a stale token.
- the agent tables' CHECK constraints as rewritten for fewer checks per row: the same verdict as
  the earlier constraints on a grid of boundary values, nulls included.

Two rules these attacks keep: a claim racing ``deregister_worker`` leases nothing to the stopped
worker (claim_batch reads the worker row FOR SHARE), and a worker stopped in a burn-down leaves no
step it had just claimed running under its stopped id (the shutdown waits for a claim already on
the server before it runs or releases what is held).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from core_helpers import (
    ORDERS,
    Claim,
    Conn,
    backend_pid,
    cancel_run,
    claim,
    claim_one,
    complete_batch,
    parked_parent,
    race,
    register,
    rows,
    scalar,
    set_clock,
    start_step,
    submit_many,
    wait_blocked_or_done,
)
from pgflight import db, errors
from pgflight.recipes import Registry
from pgflight.worker import Worker
from worker_support import wait_for

ConnectFactory = Callable[..., Conn]


def _status(conn: Conn, attempt_ids: list[int]) -> list[tuple[str, int | None]]:
    """(status, worker_id) of each attempt, in the order given."""
    got = {
        int(r["id"]): (r["status"], r["worker_id"])
        for r in rows(
            conn,
            "select id, status, worker_id from pgflight.step_attempts where id = any (%s)",
            [attempt_ids],
        )
    }
    return [got[a] for a in attempt_ids]


def _pairs(conn: Conn, query: str, params: list[Any]) -> dict[Any, Any]:
    """A two-column query as a dict of its first column to its second."""
    return dict(conn.execute(query, params).fetchall())


def _queued_ids(conn: Conn) -> list[int]:
    return [
        int(r["id"])
        for r in rows(conn, "select id from pgflight.step_attempts where status = 'queued' order by id")
    ]


def _two_claimed_two_queued(conn: Conn) -> tuple[int, list[Claim], list[int]]:
    """A worker holding two claimed attempts, with two more queued: (worker id, claims, queued)."""
    w = register(conn)
    submit_many(conn, 4, "a")
    got = claim(conn, w, 2, 30)
    return w, got, _queued_ids(conn)


def _complete_and_claim(conn: Conn, w: int, got: list[Claim], results: list[Any]) -> Any:
    return db.complete_and_claim(
        conn,
        w,
        [c.attempt_id for c in got],
        [c.token for c in got],
        results,
        batch_size=2,
        lease_s=30,
    )


# --- db.complete_and_claim: one statement, all or nothing -------------------------------------


def test_a_refused_result_keeps_neither_the_claim_nor_the_other_completions(eng: Conn) -> None:
    """The server refuses one result (JSON text with a NUL escape, which jsonb cannot store): the
    whole statement fails, so the slots it would have claimed stay queued and the good result is
    not kept either (the worker then completes the batch row by row)."""
    w, got, queued = _two_claimed_two_queued(eng)
    with pytest.raises(psycopg.Error) as e:
        _complete_and_claim(eng, w, got, [{"ok": 1}, Jsonb('{"s": "a\\u0000b"}', dumps=str)])
    assert e.value.sqlstate == "22P05"
    assert _status(eng, [c.attempt_id for c in got]) == [("claimed", w)] * 2
    assert _status(eng, queued) == [("queued", None)] * 2
    assert scalar(eng, "select count(*) from pgflight.run_events where reason = 'claimed'") == 2


def test_an_unknown_worker_completes_nothing_in_the_combined_statement(eng: Conn) -> None:
    """ZF010 from the claim: nothing of the completion is kept (the worker completes alone).
    The call names a stopped worker id of the same login, the holder's tokens in hand (deregister_worker
    releases what a worker holds, so the holder itself stays
    registered here)."""
    w, got, queued = _two_claimed_two_queued(eng)
    stopped = register(eng)
    eng.execute("select pgflight.deregister_worker(%s)", [stopped])
    with pytest.raises(errors.UnknownWorker):
        _complete_and_claim(eng, stopped, got, [{"ok": 1}, {"ok": 2}])
    assert _status(eng, [c.attempt_id for c in got]) == [("claimed", w)] * 2
    assert _status(eng, queued) == [("queued", None)] * 2
    # complete_batch alone (the worker's fallback) still completes them by their tokens
    assert complete_batch(eng, got) == ["succeeded", "succeeded"]


def test_a_connection_lost_mid_statement_keeps_neither_half(eng: Conn, connect: ConnectFactory) -> None:
    """The combined statement claims, then waits on an attempt row another session holds; its
    backend is terminated there. Nothing is kept: the claimed rows are queued again and the
    completions are not applied, so the worker's retry of complete_batch alone is safe."""
    w, got, queued = _two_claimed_two_queued(eng)
    holder, worker_conn = connect(), connect(30)
    set_clock(worker_conn, 1)
    holder.execute("begin")
    holder.execute("select 1 from pgflight.step_attempts where id = %s for update", [got[1].attempt_id])
    with ThreadPoolExecutor(1) as pool:
        f = pool.submit(_complete_and_claim, worker_conn, w, got, [{"ok": 1}, {"ok": 2}])
        assert wait_blocked_or_done(eng, backend_pid(worker_conn), f)
        assert not f.done()
        # the claim ran first: its two rows are leased (in the statement's own transaction)
        eng.execute("select pg_terminate_backend(%s)", [backend_pid(worker_conn)])
        with pytest.raises(psycopg.OperationalError):
            f.result(timeout=30)
    holder.execute("rollback")
    assert _status(eng, [c.attempt_id for c in got]) == [("claimed", w)] * 2
    assert _status(eng, queued) == [("queued", None)] * 2
    assert complete_batch(eng, got) == ["succeeded", "succeeded"]


@pytest.mark.parametrize("order", ["a_then_b", "b_then_a"])
def test_the_combined_statement_and_the_heartbeat_do_not_deadlock(
    eng: Conn, connect: ConnectFactory, order: str
) -> None:
    """The heartbeat takes the worker row, then the attempts it renews; the combined statement's
    claim takes the worker row (here always: its session's clock is behind the last sighting),
    then complete_batch the same attempts. Either one first, the other waits and both succeed."""
    w, got, _ = _two_claimed_two_queued(eng)
    beat, work = connect(), connect()
    set_clock(beat, 20)  # the heartbeat's sighting is ahead of the claim's clock: the claim writes it
    set_clock(work, 10)
    ids, toks = [c.attempt_id for c in got], [c.token for c in got]
    a, b, _blocked = race(
        lambda: beat.execute("select * from pgflight.heartbeat(%s, %s, %s)", [w, ids, toks]).fetchall(),
        beat,
        lambda: _complete_and_claim(work, w, got, [{"ok": 1}, {"ok": 2}]),
        work,
        order=order,
        observer=eng,
    )
    assert a.error is None and b.error is None, (a, b)
    outcomes, claims = b.value
    assert [o.outcome for o in outcomes] == ["succeeded", "succeeded"]
    assert len(claims) == 2


# --- last_seen_at at most once a second: the claim no longer takes the worker's row -------------


@pytest.mark.parametrize("since_s", [0.5, 5.0], ids=["within_the_second", "seconds_later"])
def test_a_claim_racing_deregister_worker_leases_nothing_to_the_stopped_worker(
    eng: Conn, connect: ConnectFactory, since_s: float
) -> None:
    """
    deregister_worker commits while a claim of the same worker runs. A claim that wrote
    ``update workers ... where stopped_at is null`` waited on deregister's row lock, re-read the
    row and raised ZF010. Since the claim reads the row without a lock (and renews it at most once
    a second, by id alone), it leases steps to a worker that is already stopped: nobody heartbeats
    them, and they are reclaimed at lease expiry with an attempt spent.
    """
    claimer, stopper = connect(), connect()
    set_clock(claimer, 0)
    w = register(claimer)
    submit_many(eng, 2, "a")
    set_clock(claimer, since_s)
    a, b, _blocked = race(
        lambda: stopper.execute("select pgflight.deregister_worker(%s)", [w]),
        stopper,
        lambda: claim(claimer, w, 2, 30),
        claimer,
        order="a_then_b",
        observer=eng,
    )
    assert a.error is None
    stranded = scalar(
        eng,
        "select count(*) from pgflight.step_attempts a join pgflight.workers w on w.id = a.worker_id"
        " where a.status in ('claimed', 'running') and w.stopped_at is not null",
    )
    assert (b.error, stranded) == ("ZF010", 0), (
        f"claim got {b.value or b.error}; {stranded} leased to a stopped worker"
    )


def test_a_worker_that_only_claims_stays_alive_in_every_reader(eng: Conn) -> None:
    """A worker that holds nothing sends no heartbeat: only its claims renew last_seen_at, at most
    once a second. Polling every few seconds, it stays alive for worker_list, engine_health and
    metrics_snapshot; a minute without a claim makes it stale in all three at once."""
    set_clock(eng, 0)
    w = register(eng)
    for t in range(0, 120, 3):  # a poll every 3 s, nothing ready
        set_clock(eng, t + 0.25)
        assert claim(eng, w, 8, 30) == []

    def alive() -> tuple[Any, Any, Any]:
        return (
            scalar(eng, "select alive from pgflight.worker_list() where worker_id = %s", [w]),
            scalar(eng, "select workers_alive from pgflight.engine_health"),
            scalar(
                eng,
                "select coalesce(sum(value), 0) from pgflight.metrics_snapshot()"
                " where metric = 'workers_alive'",
            ),
        )

    set_clock(eng, 119.9)
    assert alive() == (True, 1, 1)
    set_clock(eng, 117.25 + 61)
    assert alive() == (False, 0, 0)


# --- the far deadline: no timer in the worker, the server's sweep ends it ----------------------


@pytest.fixture
def hung() -> Iterator[threading.Event]:
    """An event a hung recipe waits on; set at teardown so its thread can end."""
    release = threading.Event()
    yield release
    release.set()


def test_a_far_deadline_is_ended_by_the_sweep_and_the_worker_frees_its_slot(
    conn: Conn, dsn: str, hung: threading.Event
) -> None:
    """
    C15 for a step with max_runtime_s of 8 days (past worker.FAR_DEADLINE_S: the worker arms no
    timer). The server clock is moved past the deadline by writing deadline_at (the worker's clock
    cannot be). With one slot, held by the hung step, the worker claims nothing, so nothing but a
    sweep ends the attempt: engine_health counts it over its deadline but heartbeating. The sweep
    then ends it (deadline_exceeded, the dead letter at max_attempts 1), the next heartbeat
    reports it lost, the worker abandons the thread, and the next step runs in the slot.
    """
    reg = Registry()
    reg.add("hang", lambda ctx: hung.wait(120))
    reg.add("noop", lambda ctx: ctx.input)
    db.create_workspace(conn, "far")
    hang = db.submit_run(conn, "far", "hang", {}, max_runtime_s=8 * 86400, max_attempts=1)
    w = Worker(dsn, reg, concurrency=1, lease_s=3, heartbeat_s=0.3, poll_s=0.2)
    t = threading.Thread(target=w.run, daemon=True)
    t.start()
    try:
        wait_for(
            lambda: (
                scalar(
                    conn,
                    "select status = 'running' from pgflight.step_attempts where id = %s",
                    [hang.attempt_id],
                )
                or None
            ),
            30,
            "the hung step to run",
        )
        conn.execute(
            "update pgflight.step_attempts set deadline_at = now() - interval '1 second' where id = %s",
            [hang.attempt_id],
        )
        time.sleep(1.5)  # heartbeats renew the lease; no claim: the worker's only slot is taken
        assert (
            scalar(conn, "select status from pgflight.step_attempts where id = %s", [hang.attempt_id])
            == "running"
        )
        assert scalar(conn, "select over_deadline_heartbeating from pgflight.engine_health") == 1
        assert scalar(conn, "select pgflight.reclaim_expired()") == 1
        assert (
            scalar(conn, "select status from pgflight.step_status where step_id = %s", [hang.step_id])
            == "dead_letter"
        )
        assert (
            scalar(
                conn,
                "select count(*) from pgflight.run_events"
                " where attempt_id = %s and reason = 'deadline_exceeded'",
                [hang.attempt_id],
            )
            == 1
        )
        nxt = db.submit_run(conn, "far", "noop", {"n": 1})
        wait_for(
            lambda: (
                scalar(
                    conn,
                    "select status = 'succeeded' from pgflight.step_status where step_id = %s",
                    [nxt.step_id],
                )
                or None
            ),
            30,
            "the next step to run in the freed slot",
        )
    finally:
        hung.set()
        w.stop()
        t.join(30)


# --- _complete_many: batches of roots, and batches that are not -------------------------------


@pytest.mark.parametrize("order", ORDERS)
def test_cancel_racing_a_batch_of_roots_ends_each_run_once(
    eng: Conn, connect: ConnectFactory, order: str
) -> None:
    """C26 on the one-statement path: cancel_run of one root's run against complete_batch of two
    roots. The cancelled run is either succeeded (the cancel came late: a no-op) or cancelled with
    its completion refused as cancelled; the other run succeeds; never both, never neither."""
    w = register(eng)
    submit_many(eng, 2, "a")
    got = claim(eng, w, 2, 30)
    for c in got:
        start_step(eng, c)
    canceller, completer = connect(), connect()
    set_clock(canceller, 1)
    set_clock(completer, 1)
    victim = got[0]
    a, b, _ = race(
        lambda: cancel_run(canceller, victim.run_id),
        canceller,
        lambda: complete_batch(completer, got),
        completer,
        order=order,
        observer=eng,
    )
    assert a.error is None and b.error is None, (a, b)
    mine, other = b.value
    assert other == "succeeded"
    run = rows(
        eng,
        "select r.status as run, s.status as step, a.status as attempt from pgflight.runs r"
        " join pgflight.step_status s on s.run_id = r.id"
        " join pgflight.step_attempts a on a.step_id = s.step_id"
        " where a.id = %s",
        [victim.attempt_id],
    )[0]
    if mine == "succeeded":
        assert run == {"run": "succeeded", "step": "succeeded", "attempt": "succeeded"}
    else:
        # refused: the attempt stays cancel_requested until its worker acknowledges (release_step)
        # or its lease lapses; it never succeeds
        assert mine == "cancelled"
        assert run["run"] == "cancelled" and run["step"] == run["attempt"] == "cancel_requested", run
    ended = scalar(
        eng,
        "select count(*) from pgflight.run_events"
        " where run_id = %s and reason in ('run_succeeded', 'run_cancelled')",
        [victim.run_id],
    )
    assert ended <= 1


def test_a_mixed_batch_with_a_cancelled_root_a_stale_child_and_a_duplicate(eng: Conn) -> None:
    """One complete_batch: a root whose run was cancelled while it ran, a plain root, a child given
    twice (the parent's last child) and a child with a stale token (of another parent). Each row
    gets its own outcome, the parent of the duplicated child wakes exactly once, the stale child's
    parent stays parked."""
    w = register(eng)
    woken, _ = parked_parent(eng, w, 1)
    parked, _ = parked_parent(eng, w, 1, child_recipe="other_child")
    submit_many(eng, 2, "root")
    child = claim_one(eng, w, recipes=["child"])
    stale = claim_one(eng, w, recipes=["other_child"])
    r_cancel, r_plain = claim(eng, w, 2, 30, ["root"])
    start_step(eng, r_cancel)
    cancel_run(eng, r_cancel.run_id)
    batch = sorted([r_cancel, r_plain, child, child, stale], key=lambda c: c.attempt_id)
    toks = [c.token + (1000 if c is stale else 0) for c in batch]
    got = _pairs(
        eng,
        "select attempt_id, outcome from pgflight.complete_batch(%s, %s, %s)",
        [[c.attempt_id for c in batch], toks, [Jsonb({"i": i}) for i in range(len(batch))]],
    )
    assert got == {
        r_cancel.attempt_id: "cancelled",
        r_plain.attempt_id: "succeeded",
        child.attempt_id: "succeeded",
        stale.attempt_id: "lease_lost",
    }
    status = _pairs(
        eng,
        "select id, status from pgflight.runs where id = any (%s)",
        [[r_cancel.run_id, r_plain.run_id, woken.run_id, parked.run_id]],
    )
    assert status == {
        r_cancel.run_id: "cancelled",
        r_plain.run_id: "succeeded",
        woken.run_id: "running",
        parked.run_id: "running",
    }
    resumed = _pairs(
        eng,
        "select s.id, count(e.*) from pgflight.steps s left join pgflight.run_events e"
        " on e.step_id = s.id and e.reason = 'parent_resumed' where s.id = any (%s) group by s.id",
        [[woken.step_id, parked.step_id]],
    )
    assert resumed == {woken.step_id: 1, parked.step_id: 0}
    assert (
        scalar(
            eng,
            "select count(*) from pgflight.run_events where attempt_id = %s and reason = 'succeeded'",
            [child.attempt_id],
        )
        == 1
    )
    assert (
        scalar(eng, "select status from pgflight.step_attempts where id = %s", [stale.attempt_id])
        == "running"
    )


def test_a_batch_of_roots_frees_its_concurrency_key_for_the_parked_step(eng: Conn) -> None:
    """The one-statement completion of roots still fires the key slot's trigger: a step parked
    behind a full concurrency key (limit 1) is woken in the completing transaction and claimable
    at once, before any sweep; the batch took the roots-only path (no _steps_finished)."""
    w = register(eng)
    submit_many(eng, 3, "keyed", concurrency_key="k", concurrency_limit=1)
    first = claim(eng, w, 3, 30, ["keyed"])
    assert len(first) == 1  # the others parked behind the key
    eng.execute("set track_functions = 'pl'")
    with eng.transaction():
        assert complete_batch(eng, first) == ["succeeded"]
        calls = scalar(
            eng,
            "select coalesce(sum(calls), 0) from pg_stat_xact_user_functions"
            " where schemaname = 'pgflight' and funcname = '_steps_finished'",
        )
    assert calls == 0
    second = claim(eng, w, 3, 30, ["keyed"])
    assert len(second) == 1 and second[0].run_id != first[0].run_id


# --- the agent tables' CHECK constraints: same verdicts as before their rewrite ---------------

# The rules before the rewrite, as tables/traces.sql, costs.sql, agent_runs_hot.sql and budgets.sql wrote them
# (traces.block_type_is_known is gone: any block type a model answers with is stored since, the
# name checked for its form by block_type_is_a_name).
OLD_CHECKS: dict[str, dict[str, str]] = {
    "traces": {
        "role_is_known": "role in ('user', 'assistant', 'system')",
        "status_is_known": "status in ('completed', 'in_flight', 'interrupted')",
        "tool_blocks_name_their_call": "block_type not in ('tool_use', 'tool_result')"
        " or tool_use_id is not null",
        "iteration_is_not_negative": "iteration >= 0 and seq >= 0",
    },
    "costs": {
        "tokens_are_not_negative": "input_tokens >= 0 and output_tokens >= 0 and cache_creation_tokens >= 0"
        " and cache_read_tokens >= 0",
        "usd_is_not_negative": "usd >= 0",
    },
    "agent_runs": {
        "totals_are_not_negative": "iterations >= 0 and tool_calls >= 0 and usd >= 0",
        "reservation_is_whole": "case when reserved_iteration is null"
        " then reserved_usd = 0 and reserved_budget_ids is null"
        " else reserved_attempt_id is not null end",
    },
    "budgets": {
        "scope_is_known": "scope in ('run', 'step', 'workspace_day')",
        "scope_names_its_key": "case scope"
        " when 'run' then run_id is not null and step_id is null and day is null"
        " when 'step' then run_id is not null and step_id is not null and day is null"
        " else run_id is null and step_id is null and day is not null end",
        "amounts_are_not_negative": "spent_usd >= 0 and reserved_usd >= 0"
        " and (limit_usd is null or limit_usd >= 0)",
        "max_wall_is_positive": "max_wall_s is null or max_wall_s > 0",
    },
}

# Boundary values per column (null only where the column may be null; the not-null columns'
# nulls are refused by NOT NULL before any check).
_TEXTS = {
    "role": ["user", "assistant", "system", "tool", "User", ""],
    "block_type": ["thinking", "text", "tool_use", "tool_result", "api_error", "image", ""],
    "status": ["completed", "in_flight", "interrupted", "done"],
    "scope": ["run", "step", "workspace_day", "day", ""],
}
_INTS = ["-1", "0", "1", "-2147483648", "2147483647"]
_USD = ["-0.00000001", "0", "0.00000001", "-1", "99999999.99999999"]
_COLUMNS: dict[str, dict[str, list[str]]] = {
    "traces": {
        "role": [f"'{v}'" for v in _TEXTS["role"]],
        "block_type": [f"'{v}'" for v in _TEXTS["block_type"]],
        "status": [f"'{v}'" for v in _TEXTS["status"]],
        "tool_use_id": ["null", "'t1'", "''"],
        "iteration": _INTS[:3],
        "seq": _INTS,
    },
    "costs": {
        "input_tokens": _INTS[:3],
        "output_tokens": _INTS[:3],
        "cache_creation_tokens": _INTS[:3],
        "cache_read_tokens": ["-9223372036854775808", "0", "1"],
        "usd": _USD,
    },
    "agent_runs": {
        "iterations": _INTS[:3],
        "tool_calls": _INTS[:3],
        "usd": _USD[:3],
        "reserved_iteration": ["null", "0", "3"],
        "reserved_usd": _USD[:3],
        "reserved_budget_ids": ["null", "'{}'::bigint[]", "'{1}'::bigint[]"],
        "reserved_attempt_id": ["null", "7"],
    },
    "budgets": {
        "scope": [f"'{v}'" for v in _TEXTS["scope"]],
        "run_id": ["null", "1"],
        "step_id": ["null", "2"],
        "day": ["null", "'2030-01-01'::date"],
        "spent_usd": _USD[:3],
        "reserved_usd": _USD[:3],
        "limit_usd": ["null", *_USD[:3]],
        "max_wall_s": ["null", "-1", "0", "1e-300", "'NaN'", "'Infinity'", "'-Infinity'"],
    },
}


def _grid(conn: Conn, table: str) -> str:
    """A VALUES list of every combination of the table's boundary values, typed like its columns."""
    cols = _COLUMNS[table]
    types = dict(
        conn.execute(
            "select attname, format_type(atttypid, atttypmod) from pg_attribute"
            " where attrelid = %s::regclass and attnum > 0 and not attisdropped",
            [f"pgflight.{table}"],
        ).fetchall()
    )
    combos = itertools.product(*cols.values())
    values = ", ".join(
        "(" + ", ".join(f"({v})::{types[c]}" for c, v in zip(cols, combo, strict=True)) + ")"
        for combo in combos
    )
    return f"(values {values}) as g({', '.join(cols)})"


@pytest.mark.parametrize("table", list(OLD_CHECKS))
def test_every_rewritten_agent_check_gives_the_old_verdict(conn: Conn, table: str) -> None:
    """Each constraint of tables/agent_write_checks, read back from the catalog, against its text
    before the rewrite: on every combination of boundary values (negative and zero amounts at numeric(16,8)'s
    last digit, ints at their ends, unknown and differently cased names, nulls where allowed,
    NaN and infinities of max_wall_s), a row passes the new check exactly when it passed the old."""
    new = dict(
        conn.execute(
            "select conname, pg_get_expr(conbin, conrelid) from pg_constraint"
            " where conrelid = %s::regclass and contype = 'c'",
            [f"pgflight.{table}"],
        ).fetchall()
    )
    grid = _grid(conn, table)
    for name, old in OLD_CHECKS[table].items():
        assert name in new, f"{table}.{name} is gone"
        differ = conn.execute(
            f"select g.*, ({old}) is not false as old, ({new[name]}) is not false as new from {grid}"
            f" where (({old}) is not false) <> (({new[name]}) is not false) limit 5"
        ).fetchall()
        assert differ == [], f"{table}.{name}: {differ}"
        # and the grid is not trivial: the old rule refuses some of it
        assert conn.execute(f"select bool_or(({old}) is false) from {grid}").fetchone() == (True,)


# --- the worker's shutdown while completions and claims go out together ----------------------


def test_a_worker_stopped_in_a_backlog_leaves_no_step_leased_to_it(conn: Conn, dsn: str) -> None:
    """
    Stop a worker in the middle of a burn-down (the completer sends its claims with completions),
    several times. After each worker's run() returns, every step it claimed is either succeeded
    or back in the queue: none is left claimed or running by the stopped worker, to wait out
    its lease and spend an attempt.
    """
    reg = Registry()
    reg.add("noop", lambda ctx: ctx.input)
    db.create_workspace(conn, "stop")
    db.submit_many(conn, "stop", [{"recipe": "noop", "input": {"i": i}} for i in range(2000)])
    left: dict[int, list[Any]] = {}
    for round_ in range(5):
        w = Worker(dsn, reg, concurrency=8, batch_size=8, poll_s=0.5, grace_s=2)
        t = threading.Thread(target=w.run, daemon=True)
        t.start()
        target = 100 + 37 * round_  # a different point of the drain each round
        wait_for(lambda w=w, n=target: w.steps_done >= n or None, 60, "a backlog under way")  # type: ignore[misc]
        w.stop()
        t.join(60)
        assert not t.is_alive()
        left[int(w.worker_id or 0)] = [
            (r["status"], r["started"], r["events"], r["claimed_vs_stopped_ms"])
            for r in rows(
                conn,
                "select a.status, a.started_at is not null as started,"
                " (select array_agg(e.reason order by e.id) from pgflight.run_events e"
                "   where e.attempt_id = a.id) as events,"
                " round(extract(epoch from a.claimed_at - w.stopped_at) * 1000) as claimed_vs_stopped_ms"
                " from pgflight.step_attempts a join pgflight.workers w on w.id = a.worker_id"
                " where a.worker_id = %s and a.status in ('claimed', 'running') order by a.id",
                [w.worker_id],
            )
        ]
    assert all(not held for held in left.values()), f"steps still leased to stopped workers: {left}"


def test_a_stop_while_the_combined_statement_runs_leaves_no_step_leased(
    conn: Conn, dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """
    SIGTERM (Worker.stop) arrives while the completer's combined statement (completions and the
    claim of the slots they free) is on the server; the statement takes 0.5 s (a busy server).
    _shutdown waits for the running steps and for ``_pending``, which the completer emptied when
    it sent the batch, not for the statement itself; the claim then commits steps leased to this
    worker, which deregisters and exits without starting or releasing them. They stay running
    under a stopped worker until their lease lapses, and the reclaim spends an attempt of each.
    """
    reg = Registry()
    reg.add("noop", lambda ctx: ctx.input)
    db.create_workspace(conn, "stop")
    db.submit_many(conn, "stop", [{"recipe": "noop", "input": {"i": i}} for i in range(2000)])
    w = Worker(dsn, reg, concurrency=8, batch_size=8, poll_s=0.5, grace_s=2)
    real = db.complete_and_claim

    def slow(*args: Any, **kwargs: Any) -> Any:
        if w.steps_done >= 100 and not w._stopping.is_set():
            w.stop()  # the signal lands while this statement is on its way
            time.sleep(0.5)
        return real(*args, **kwargs)

    monkeypatch.setattr(db, "complete_and_claim", slow)
    t = threading.Thread(target=w.run, daemon=True)
    t.start()
    t.join(90)
    assert not t.is_alive()
    assert w._stopping.is_set(), "the worker never sent a combined statement"
    held = rows(
        conn,
        "select a.id, a.status, a.started_at is not null as started from pgflight.step_attempts a"
        " join pgflight.workers w on w.id = a.worker_id"
        " where w.stopped_at is not null and a.status in ('claimed', 'running') order by a.id",
    )
    assert held == [], f"{len(held)} steps left leased to the stopped worker: {held}"
