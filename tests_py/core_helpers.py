"""
Helpers shared by the SQL-engine tests (test_core_*.py): thin calls of the SQL API on raw psycopg 3
connections, the fake clock, event and attempt reads, the invariant queries, and `race`, which
runs two operations on two real connections in a chosen order.

Orders of a race (see `race`):
    together      both threads wait on a barrier and call at the same instant;
    a_then_b      A runs inside an open transaction; B is started and is seen either waiting on
                  A's lock (pg_stat_activity.wait_event_type = 'Lock') or already done (SKIP
                  LOCKED paths never wait); then A commits;
    b_then_a      the mirror image.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

Conn = psycopg.Connection[Any]
Row = dict[str, Any]

T0 = datetime(2030, 1, 1, tzinfo=UTC)
WORKSPACE = "core"
LIVE = ("queued", "claimed", "running", "cancel_requested", "awaiting_children", "awaiting_approval")
TERMINAL = ("succeeded", "dead_letter", "cancelled")
ORDERS = ("together", "a_then_b", "b_then_a")


# --- the fake clock -------------------------------------------------------------------------


def at(seconds: float) -> datetime:
    """The instant `seconds` after T0 (the fake clock's origin)."""
    return T0 + timedelta(seconds=seconds)


def set_clock(conn: Conn, when: datetime | float | None) -> None:
    """
    Move this session's `pgflight._now()` (fake clock; the template allows it).

    :param when: an instant, seconds after T0, or None for the real clock.
    """
    if isinstance(when, int | float):
        when = at(when)
    conn.execute("select set_config('pgflight.fake_now', %s, false)", [when.isoformat() if when else ""])


# --- the API ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Submitted:
    run_id: int
    step_id: int
    attempt_id: int


@dataclass(frozen=True)
class Claim:
    attempt_id: int
    token: int
    step_id: int
    run_id: int
    attempt_no: int
    lease_expires_at: datetime
    deadline_at: datetime | None


def rows(conn: Conn, query: str, params: Sequence[Any] | None = None) -> list[Row]:
    """Run `query` and return its rows as dicts."""
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(query, params)
        return cur.fetchall() if cur.description else []


def one(conn: Conn, query: str, params: Sequence[Any] | None = None) -> Row:
    """Run `query`; return its single row as a dict."""
    result = rows(conn, query, params)
    assert len(result) == 1, f"expected one row, got {len(result)}: {query}"
    return result[0]


def scalar(conn: Conn, query: str, params: Sequence[Any] | None = None) -> Any:
    """Run `query`; return the first column of its single row."""
    row = conn.execute(query, params).fetchone()
    assert row is not None, query
    return row[0]


def setup_engine(conn: Conn, workspace: str = WORKSPACE) -> str:
    """Create the test workspace; return its name."""
    conn.execute("select pgflight.create_workspace(%s)", [workspace])
    return workspace


def register(conn: Conn, name: str = "w") -> int:
    """Register a worker; return its id."""
    return int(scalar(conn, "select pgflight.register_worker(%s)", [name]))


def submit(
    conn: Conn, recipe: str = "noop", input_: Any = None, workspace: str = WORKSPACE, **options: Any
) -> Submitted:
    """submit_run; options are the run options (max_attempts, lease_s, backoff, ...)."""
    row = one(
        conn,
        "select * from pgflight.submit_run(%s, %s, %s, %s)",
        [workspace, recipe, Jsonb(input_ if input_ is not None else {}), Jsonb(options)],
    )
    return Submitted(row["run_id"], row["step_id"], row["attempt_id"])


def submit_many(conn: Conn, n: int, recipe: str = "noop", workspace: str = WORKSPACE, **options: Any) -> None:
    """Submit n runs of `recipe` in one statement."""
    conn.execute(
        "select pgflight.submit_run(%s, %s, jsonb_build_object('i', g), %s) from generate_series(1, %s) g",
        [workspace, recipe, Jsonb(options), n],
    )


def claim(
    conn: Conn, worker_id: int, n: int = 1, lease_s: float = 30.0, recipes: Sequence[str] | None = None
) -> list[Claim]:
    """claim_batch; return the claims in the order the engine gave them."""
    got = rows(
        conn,
        "select * from pgflight.claim_batch(%s, %s, %s, %s)",
        [worker_id, n, lease_s, list(recipes) if recipes is not None else None],
    )
    return [
        Claim(
            r["attempt_id"],
            r["fencing_token"],
            r["step_id"],
            r["run_id"],
            r["attempt_no"],
            r["lease_expires_at"],
            r["deadline_at"],
        )
        for r in got
    ]


def claim_one(
    conn: Conn,
    worker_id: int,
    lease_s: float = 30.0,
    recipes: Sequence[str] | None = None,
    *,
    start: bool = True,
) -> Claim:
    """Claim exactly one attempt (asserting there is one) and, by default, start it."""
    got = claim(conn, worker_id, 1, lease_s, recipes)
    assert len(got) == 1, f"expected one claimable attempt for {recipes}, got {len(got)}"
    if start:
        start_step(conn, got[0])
    return got[0]


def start_step(conn: Conn, c: Claim) -> None:
    conn.execute("select * from pgflight.start_step(%s, %s)", [c.attempt_id, c.token])


def complete(conn: Conn, c: Claim, result: Any = None) -> None:
    conn.execute(
        "select * from pgflight.complete_step(%s, %s, %s)",
        [c.attempt_id, c.token, Jsonb(result) if result is not None else None],
    )


def complete_batch(conn: Conn, claims: Sequence[Claim], result: Any = None) -> list[str]:
    """complete_batch; return the per-row outcomes."""
    got = conn.execute(
        "select outcome from pgflight.complete_batch(%s, %s, %s)",
        [[c.attempt_id for c in claims], [c.token for c in claims], [Jsonb(result)] * len(claims)],
    ).fetchall()
    return [r[0] for r in got]


def fail(conn: Conn, c: Claim, error: Any, **options: Any) -> Row:
    return one(
        conn,
        "select * from pgflight.fail_step(%s, %s, %s, %s)",
        [c.attempt_id, c.token, Jsonb(error), Jsonb(options)],
    )


def release(conn: Conn, c: Claim) -> str:
    return str(scalar(conn, "select status from pgflight.release_step(%s, %s)", [c.attempt_id, c.token]))


def heartbeat(conn: Conn, worker_id: int, claims: Sequence[Claim]) -> dict[int, str]:
    """heartbeat; return {attempt_id: held | lease_lost | cancelled}."""
    got = conn.execute(
        "select attempt_id, status from pgflight.heartbeat(%s, %s, %s)",
        [worker_id, [c.attempt_id for c in claims], [c.token for c in claims]],
    ).fetchall()
    return {int(a): str(s) for a, s in got}


def reclaim(conn: Conn, limit: int = 1000) -> int:
    return int(scalar(conn, "select pgflight.reclaim_expired(%s)", [limit]))


def cancel_run(conn: Conn, run_id: int) -> Row:
    return one(conn, "select * from pgflight.cancel_run(%s, 'test')", [run_id])


def spawn(conn: Conn, c: Claim, keys: Iterable[str], recipe: str = "child", **options: Any) -> Row:
    """spawn_children of no-op children with these keys under the held attempt `c`."""
    children = [{"key": k, "recipe": recipe, "input": {}} for k in keys]
    return one(
        conn,
        "select * from pgflight.spawn_children(%s, %s, %s, %s)",
        [c.attempt_id, c.token, Jsonb(children), Jsonb(options)],
    )


def sqlstate(fn: Callable[[], Any]) -> str | None:
    """Run fn; return the SQLSTATE it raised, or None when it succeeded."""
    try:
        fn()
    except psycopg.Error as e:
        return e.sqlstate
    return None


# --- reads --------------------------------------------------------------------------------


def events(
    conn: Conn,
    *,
    attempt_id: int | None = None,
    step_id: int | None = None,
    run_id: int | None = None,
    reason: str | None = None,
) -> list[Row]:
    """Events rows matching every filter given, in log order."""
    return rows(
        conn,
        "select * from pgflight.run_events where (%(a)s::bigint is null or attempt_id = %(a)s)"
        " and (%(s)s::bigint is null or step_id = %(s)s) and (%(r)s::bigint is null or run_id = %(r)s)"
        " and (%(why)s::text is null or reason = %(why)s) order by id",
        {"a": attempt_id, "s": step_id, "r": run_id, "why": reason},  # type: ignore[arg-type]
    )


def reasons(conn: Conn, attempt_id: int) -> list[str]:
    """The reasons of an attempt's events, in log order."""
    return [e["reason"] for e in events(conn, attempt_id=attempt_id)]


def attempt(conn: Conn, attempt_id: int) -> Row:
    return one(conn, "select * from pgflight.step_attempts where id = %s", [attempt_id])


def attempts_of(conn: Conn, step_id: int) -> list[Row]:
    return rows(
        conn, "select * from pgflight.step_attempts where step_id = %s order by attempt_no", [step_id]
    )


def step(conn: Conn, step_id: int) -> Row:
    """The step's current state (view step_status)."""
    return one(conn, "select * from pgflight.step_status where step_id = %s", [step_id])


def table_counts(conn: Conn) -> dict[str, int]:
    """Row counts of every engine table (to prove that a refused call wrote nothing)."""
    names = ("workspaces", "runs", "steps", "step_attempts", "events", "workers", "approvals")
    return {n: int(scalar(conn, f"select count(*) from pgflight.{n}")) for n in names}


INVARIANTS = {
    "a queued attempt at or over the ceiling (C07)": """
        select a.id from pgflight.step_attempts a join pgflight.steps s on s.id = a.step_id
         where a.status = 'queued' and s.failed_attempts >= s.max_attempts""",
    "a dead letter without its last error (C07)": """
        select step_id from pgflight.dead_letters where error is null""",
    "more than one live attempt for a step (invariant 1)": """
        select step_id from pgflight.step_attempts
         where status in ('queued', 'claimed', 'running', 'cancel_requested', 'awaiting_children',
                          'awaiting_approval')
         group by step_id having count(*) > 1""",
    "a running or queued attempt under a terminal parent (C18)": """
        select c.step_id from pgflight.step_status c join pgflight.step_status p on p.step_id = c.parent_id
         where c.status in ('queued', 'claimed', 'running')
           and p.status in ('succeeded', 'dead_letter', 'cancelled')""",
    "a running or queued attempt in a finished run (C18)": """
        select a.id from pgflight.step_attempts a join pgflight.runs r on r.id = a.run_id
         where a.status in ('queued', 'claimed', 'running') and r.status <> 'running'""",
    "an attempt that both succeeded and failed or was cancelled (C02, C26)": """
        select attempt_id from pgflight.run_events
         where reason = 'succeeded' and attempt_id in (
               select attempt_id from pgflight.run_events where to_status in
                      ('lease_expired', 'failed', 'timed_out', 'dead_letter', 'cancelled',
                       'cancel_requested'))""",
}


def invariant_violations(conn: Conn) -> dict[str, list[Any]]:
    """Each engine invariant that does not hold, with the offending ids (empty dict: all hold)."""
    bad = {}
    for name, query in INVARIANTS.items():
        found = [r[0] for r in conn.execute(query).fetchall()]
        if found:
            bad[name] = found[:20]
    return bad


# --- concurrency --------------------------------------------------------------------------


@dataclass
class Outcome:
    """What one side of a race got: a value, or the SQLSTATE it raised."""

    value: Any = None
    error: str | None = None


def _call(fn: Callable[[], Any]) -> Outcome:
    try:
        return Outcome(value=fn())
    except psycopg.Error as e:
        return Outcome(error=e.sqlstate)


def backend_pid(conn: Conn) -> int:
    return int(conn.info.backend_pid)


def wait_blocked_or_done(observer: Conn, pid: int, future: Future[Any], timeout_s: float = 10) -> bool:
    """
    Wait until the backend `pid` waits on a lock (pg_stat_activity.wait_event_type = 'Lock') or
    `future` has finished. Polls; never sleeps for a guessed time.

    :return: True when the backend was seen waiting on a lock, False when it finished first.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if future.done():
            return False
        waiting = observer.execute(
            "select wait_event_type = 'Lock' from pg_stat_activity where pid = %s", [pid]
        ).fetchone()
        if waiting and waiting[0]:
            return True
    raise AssertionError(f"backend {pid} neither finished nor waited on a lock within {timeout_s} s")


def race(
    a: Callable[[], Any], conn_a: Conn, b: Callable[[], Any], conn_b: Conn, *, order: str, observer: Conn
) -> tuple[Outcome, Outcome, bool]:
    """
    Run `a` (on conn_a) and `b` (on conn_b) concurrently in the given order (see module doc).

    :return: (outcome of a, outcome of b, whether the second one was seen waiting on the first's lock).
    """
    with ThreadPoolExecutor(max_workers=2) as pool:
        if order == "together":
            barrier = threading.Barrier(2)

            def synced(fn: Callable[[], Any]) -> Outcome:
                barrier.wait(timeout=10)
                return _call(fn)

            fa, fb = pool.submit(synced, a), pool.submit(synced, b)
            return fa.result(), fb.result(), False
        first, first_conn, second, second_conn = (
            (a, conn_a, b, conn_b) if order == "a_then_b" else (b, conn_b, a, conn_a)
        )
        first_conn.execute("begin")
        held = _call(first)
        try:
            f2 = pool.submit(_call, second)
            blocked = wait_blocked_or_done(observer, backend_pid(second_conn), f2)
        finally:
            first_conn.execute("rollback" if held.error else "commit")
        later = f2.result(timeout=30)
        return (held, later, blocked) if order == "a_then_b" else (later, held, blocked)


def run_parallel(fns: Sequence[Callable[[], Any]], *, synced: bool = True) -> list[Any]:
    """Run each fn on its own thread (after a common barrier when `synced`); return their results."""
    barrier = threading.Barrier(len(fns))

    def go(fn: Callable[[], Any]) -> Any:
        if synced:
            barrier.wait(timeout=30)
        return fn()

    with ThreadPoolExecutor(max_workers=len(fns)) as pool:
        futures = [pool.submit(go, fn) for fn in fns]
        return [f.result() for f in futures]


def drain(
    conn: Conn, worker_id: int, recipes: Sequence[str] | None = None, batch: int = 100, lease_s: float = 60.0
) -> int:
    """Claim and complete (batched) until nothing is claimable; return how many were completed."""
    done = 0
    while True:
        got = claim(conn, worker_id, batch, lease_s, recipes)
        if not got:
            return done
        outcomes = complete_batch(conn, got)
        assert outcomes == ["succeeded"] * len(got), outcomes
        done += len(got)


_parents = itertools.count()


def parked_parent(
    conn: Conn, worker_id: int, n_children: int, *, child_recipe: str = "child", **spawn_options: Any
) -> tuple[Submitted, Claim]:
    """
    Submit a parent (of a recipe of its own, so no other parent is claimed in its place), claim it
    and spawn n no-op children (keys c00000...); it is then parked in awaiting_children.
    """
    recipe = f"parent{next(_parents)}"
    sub = submit(conn, recipe)
    c = claim_one(conn, worker_id, recipes=[recipe])
    got = spawn(conn, c, (f"c{i:05d}" for i in range(n_children)), child_recipe, **spawn_options)
    assert got["parked"] and got["created"] == n_children, got
    return sub, c
