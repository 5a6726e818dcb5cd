"""
No lock any login can take: the engine's locks are rows no login can lock, never advisory keys.

Advisory-lock functions are executable by every login, and the engine's advisory keys were
constants or computable from its source, so a reader of one workspace could hold one in an idle
session and stop every sweep, fail every sweep pass, stall another tenant's keyed completions,
model-call admissions and rate-limited claims, or win another tenant's wake tickets. Each test
holds the key the engine used to take, from a READER login over scram (tenant A's), while tenant
B's work carries on: sweeps pass (lag under 10 s), no call is blocked past its lock timeout, and a
listener that is not a worker of B cannot win B's tickets. A held lock skips one item of a sweep,
never the pass.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from pgflight.worker import WakeTickets, claim_with_ticket
from security_support import grant, login_connect
from worker_support import WorkerProc, step_status, wait_for, worker_factory

Conn = psycopg.Connection[Any]
SWEEP_LOOP_KEY = 7383617326517504001  # the sweep loop's advisory key before engine_locks
LOCK_TIMEOUT_S = 3.0


@pytest.fixture
def su(conn: Conn) -> Conn:
    """The superuser connection, with workspaces A and B and exactly the grants each test gives."""
    conn.execute("select pgflight.create_workspace('A'), pgflight.create_workspace('B')")
    conn.execute("delete from pgflight.workspace_grants where login like 'pgf\\_%%'")
    grant(conn, "pgf_reader_a", "A", "reader")
    grant(conn, "pgf_worker_a", "A", "worker")
    grant(conn, "pgf_worker_b", "B", "worker")
    return conn


@pytest.fixture
def as_login(dsn: str, logins: Any) -> Iterator[Callable[[str], Conn]]:
    """A connection as a login, over TCP with its scram password; lock_timeout LOCK_TIMEOUT_S."""
    opened: list[Conn] = []

    def _open(login: str) -> Conn:
        c = login_connect(logins.dsn(login, dsn), timeout_s=LOCK_TIMEOUT_S)
        opened.append(c)
        return c

    yield _open
    for c in opened:
        c.close()


def _ws(su: Conn, name: str) -> int:
    row = su.execute("select id from pgflight.workspaces where name = %s", [name]).fetchone()
    assert row is not None
    return int(row[0])


def _hold(reader: Conn, key_sql: str, args: list[Any] | None = None) -> None:
    """The reader takes a session advisory lock (the attack) and keeps its session idle."""
    got = reader.execute(f"select pg_try_advisory_lock({key_sql})", args or []).fetchone()
    assert got == (True,), "the reader could take the key (advisory locks are PUBLIC)"


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.monotonic()
    out = fn()
    return out, time.monotonic() - t0


def _submit(su: Conn, ws: str, recipe: str, **options: Any) -> dict[str, int]:
    row = su.execute(
        "select run_id, step_id, attempt_id from pgflight.submit_run(%s, %s, '{}', %s)",
        [ws, recipe, Jsonb(options)],
    ).fetchone()
    assert row is not None
    return {"run_id": row[0], "step_id": row[1], "attempt_id": row[2]}


def _claim(worker: Conn, worker_id: int, recipe: str, n: int = 1) -> list[tuple[int, int]]:
    rows = worker.execute(
        "select attempt_id, fencing_token from pgflight.claim_batch(%s, %s, 60, %s)", [worker_id, n, [recipe]]
    ).fetchall()
    return [(int(r[0]), int(r[1])) for r in rows]


def _register(worker: Conn, name: str) -> int:
    row = worker.execute("select pgflight.register_worker(%s)", [name]).fetchone()
    assert row is not None
    return int(row[0])


def test_a_reader_holding_the_sweep_loops_old_key_does_not_stop_the_sweeps(
    su: Conn, as_login: Callable[[str], Conn], connect: Any
) -> None:
    reader = as_login("pgf_reader_a")
    _hold(reader, "%s", [SWEEP_LOOP_KEY])
    su.execute("update pgflight.sweep_state set last_pass_at = null")
    loop = connect(timeout_s=20)
    warnings: list[str] = []
    loop.add_notice_handler(lambda d: warnings.append(d.message_primary or ""))
    loop.execute("call pgflight.sweep_loop(1.5, 0.5)")
    assert not any("another sweep loop" in w for w in warnings), warnings
    lag = su.execute(
        "select extract(epoch from clock_timestamp() - last_pass_at) from pgflight.sweep_state"
    ).fetchone()
    assert lag is not None and lag[0] is not None, "the loop swept while the reader held the key"
    assert float(lag[0]) < 10
    # one loop at a time still: a second loop started while the first runs does not sweep with it
    first = threading.Thread(target=connect(timeout_s=20).execute, args=("call pgflight.sweep_loop(2, 0.2)",))
    first.start()
    time.sleep(0.5)
    second = connect(timeout_s=20)
    seen: list[str] = []
    second.add_notice_handler(lambda d: seen.append(d.message_primary or ""))
    second.execute("call pgflight.sweep_loop(0.5, 0.2)")
    first.join(10)
    assert any("another sweep loop" in w for w in seen), seen
    row = su.execute("select holder_pid from pgflight.engine_locks where scope = 'sweep_loop'").fetchone()
    assert row == (None,), "the loop gives its lease back when it ends"


def test_a_reader_holding_a_capped_workspaces_slot_key_fails_no_sweep_pass(
    su: Conn, as_login: Callable[[str], Conn], connect: Any
) -> None:
    b = _ws(su, "B")
    su.execute("select pgflight.set_workspace_limits('B', '{\"max_in_flight\": 4}')")
    su.execute("select pgflight.set_global_limits('{\"max_in_flight\": 100}')")
    reader = as_login("pgf_reader_a")
    _hold(reader, "pg_catalog.hashtextextended(%s, 0)", [f"pgflight.slots:{b}"])
    _hold(reader, "pg_catalog.hashtextextended(%s, 0)", ["pgflight.slots:0"])
    sweeper = connect(timeout_s=20)
    sweeper.execute(f"set lock_timeout = '{LOCK_TIMEOUT_S}s'")
    rows, took = _timed(lambda: sweeper.execute("select * from pgflight.run_sweeps()").fetchall())
    assert took < LOCK_TIMEOUT_S, f"the pass waited {took:.1f} s on a key the reader holds"
    assert ("wake_parked_keys", 0) in [tuple(r) for r in rows]


def test_a_stripe_held_by_an_open_claim_skips_that_scope_not_the_pass(
    su: Conn, as_login: Callable[[str], Conn], connect: Any
) -> None:
    """A worker that claims inside a transaction and idles holds a stripe: the sweep skips that cap alone."""
    su.execute("select pgflight.set_workspace_limits('B', '{\"max_in_flight\": 1}')")
    su.execute("select pgflight.set_workspace_limits('A', '{\"max_in_flight\": 1}')")
    _submit(su, "B", "capped")
    w2 = as_login("pgf_worker_b")
    wid = _register(w2, "holder")
    w2.execute("begin")
    assert len(_claim(w2, wid, "capped")) == 1  # its stripe stays locked until this transaction ends
    try:
        sweeper = connect(timeout_s=20)
        sweeper.execute("set lock_timeout = '2s'")
        _, took = _timed(lambda: sweeper.execute("select * from pgflight.run_sweeps()").fetchall())
        assert took < 1.5, f"the pass waited {took:.1f} s for one scope's stripe"
    finally:
        w2.execute("rollback")


def test_a_reader_holding_a_concurrency_key_blocks_neither_the_claim_nor_the_keyed_completion(
    su: Conn, as_login: Callable[[str], Conn]
) -> None:
    b = _ws(su, "B")
    for _ in range(2):
        _submit(su, "B", "keyed", concurrency_key="invoice-42", concurrency_limit=1)
    w2 = as_login("pgf_worker_b")
    wid = _register(w2, "keyed")
    claimed = _claim(w2, wid, "keyed", 2)
    assert len(claimed) == 1, "one of the key's two steps is claimed (limit 1), the other parked"
    attempt, token = claimed[0]
    w2.execute("select * from pgflight.start_step(%s, %s)", [attempt, token])
    # the reader takes the key while B's step runs: B's completion must not wait for it
    reader = as_login("pgf_reader_a")
    _hold(reader, "pg_catalog.hashtextextended(%s, 0)", [f"pgflight.key:{b}:invoice-42"])
    _, took = _timed(
        lambda: w2.execute(
            "select * from pgflight.complete_step(%s, %s, '{\"ok\": true}')", [attempt, token]
        ).fetchall()
    )
    assert took < 1.0, f"the keyed completion waited {took:.1f} s"
    assert len(_claim(w2, wid, "keyed", 2)) == 1, "the freed slot woke the parked step, and it is claimed"
    _, took = _timed(lambda: su.execute("select pgflight.wake_parked_keys(1000)").fetchone())
    assert took < 1.0


def test_a_reader_holding_a_rate_limited_workspaces_key_does_not_empty_its_claims(
    su: Conn, as_login: Callable[[str], Conn]
) -> None:
    b = _ws(su, "B")
    su.execute("select pgflight.set_workspace_limits('B', '{\"starts_per_s\": 100, \"burst\": 10}')")
    for _ in range(3):
        _submit(su, "B", "rated")
    reader = as_login("pgf_reader_a")
    _hold(reader, "pg_catalog.hashtextextended(%s, 0)", [f"pgflight.workspace:{b}"])
    w2 = as_login("pgf_worker_b")
    wid = _register(w2, "rated")
    claimed, took = _timed(lambda: _claim(w2, wid, "rated", 3))
    assert len(claimed) == 3, "the rate-limited workspace's claim took its ready steps"
    assert took < 1.0


def test_a_reader_holding_the_tokens_per_minute_key_does_not_stall_model_call_admission(
    su: Conn, as_login: Callable[[str], Conn]
) -> None:
    b = _ws(su, "B")
    su.execute("select pgflight.set_workspace_limits('B', '{\"model_tokens_per_min\": 100000}')")
    sub = _submit(su, "B", "agent")
    reader = as_login("pgf_reader_a")
    _hold(reader, "pg_catalog.hashtextextended('pgflight.model_tokens', %s)", [b])
    w2 = as_login("pgf_worker_b")
    wid = _register(w2, "agent")
    [(attempt, token)] = _claim(w2, wid, "agent")
    assert attempt == sub["attempt_id"]
    w2.execute("select * from pgflight.start_step(%s, %s)", [attempt, token])
    row = w2.execute(
        "select agent_run_id from pgflight.begin_agent_run(%s, %s, %s)",
        [attempt, token, Jsonb({"model": "claude-haiku-4-5", "task": "t"})],
    ).fetchone()
    assert row is not None
    _, took = _timed(
        lambda: w2.execute(
            "select pgflight.reserve_budget(%s, %s, %s, 1, 0.01)", [attempt, token, row[0]]
        ).fetchone()
    )
    assert took < 1.0, f"reserve_budget waited {took:.1f} s"
    _, took = _timed(
        lambda: w2.execute(
            'select * from pgflight.record_model_call(%s, %s, %s, 1, \'[{"type": "text", "text": "hi"}]\','
            " '{\"input_tokens\": 10, \"output_tokens\": 5}', 'claude-haiku-4-5', '{}')",
            [attempt, token, row[0]],
        ).fetchall()
    )
    assert took < 1.0, f"record_model_call waited {took:.1f} s"


def test_a_listener_that_is_no_worker_of_the_workspace_cannot_win_its_wake_tickets(
    su: Conn, as_login: Callable[[str], Conn]
) -> None:
    """
    A reader (and a worker of another workspace) LISTENs on pgflight_ready and, for each ticket,
    takes every key it can compute first: the old key of the recipe group and the ticket, and
    wake_ticket_key of the same. B's worker still wins the ticket and claims in the same statement.
    """
    recipes = ["noop"]
    tickets = WakeTickets(recipes)
    reader = as_login("pgf_reader_a")
    w1 = as_login("pgf_worker_a")
    reader.execute("listen pgflight_ready")
    w1.execute("listen pgflight_ready")
    w2 = as_login("pgf_worker_b")
    wid = _register(w2, "ticketed")
    with su.transaction():
        xid = str(su.execute("select pg_current_xact_id()::text").fetchone()[0])  # type: ignore[index]
        run = _submit(su, "B", "noop")
    heard = [n.payload for n in reader.notifies(timeout=2.0, stop_after=1)]
    assert heard == [xid]
    key = tickets.key(xid)
    _hold(reader, "%s", [key])  # the key every process of the group used to try
    for squatter in (reader, w1):
        with contextlib.suppress(psycopg.errors.UndefinedFunction):
            squatter.execute("select pg_try_advisory_lock(pgflight.wake_ticket_key(%s))", [key])
    won, claims = claim_with_ticket(w2, key, wid, 4, 30, recipes)
    assert won, "B's worker wins B's ticket"
    assert [c.step_id for c in claims] == [run["step_id"]]
    # the reader gets no key of its own to hold at all
    assert reader.execute("select pgflight.wake_ticket_key(%s)", [key]).fetchone() == (None,)
    w2.execute("select pg_advisory_unlock_all()")


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Callable[..., WorkerProc]]:
    """Worker subprocesses, SIGKILLed at teardown."""
    yield from worker_factory(tmp_path)


def test_a_squatting_listener_does_not_slow_another_workspaces_worker_to_its_poll(
    su: Conn, as_login: Callable[[str], Conn], dsn: str, logins: Any, workers: Callable[..., WorkerProc]
) -> None:
    """
    B's worker process (login pgf_worker_b over scram, poll 30 s: only a won ticket claims soon).
    Before each submit, a reader and a worker of A take every key of the coming ticket they can
    compute; B's step is still claimed well within a second, never at the poll.
    """
    w = workers(logins.dsn("pgf_worker_b", dsn), "--log-level", "DEBUG", "--poll", "30", "--concurrency", "2")
    wait_for(lambda: "listening on pgflight_ready" in w.output(), 20, "the worker to listen")
    time.sleep(0.5)  # its catch-up claim is over
    recipes = list(su.execute("select recipes from pgflight.workers where stopped_at is null").fetchone()[0])  # type: ignore[index]
    tickets = WakeTickets(recipes)
    reader, w1 = as_login("pgf_reader_a"), as_login("pgf_worker_a")
    latencies = []
    for _ in range(5):
        with su.transaction():
            xid = str(su.execute("select pg_current_xact_id()::text").fetchone()[0])  # type: ignore[index]
            key = tickets.key(xid)
            _hold(reader, "%s", [key])
            for squatter in (reader, w1):
                with contextlib.suppress(psycopg.errors.UndefinedFunction):
                    squatter.execute("select pg_try_advisory_lock(pgflight.wake_ticket_key(%s))", [key])
            run = _submit(su, "B", "noop")
        t0 = time.monotonic()
        step = run["step_id"]
        wait_for(
            lambda step=step: step_status(su, step) == "succeeded",
            5,
            f"B's step claimed\n{w.output()[-2000:]}",
        )
        latencies.append(time.monotonic() - t0)
    assert max(latencies) < 1.0, latencies
