"""
The fence matrix, generated from the catalogue: every pgflight function the worker, operator and
reader lanes may execute (pg_proc and has_function_privilege), called as each lane's real login
over scram with a hostile value in each argument in turn. See fence_matrix_support for how the
calls are built and judged; in short, only 22023, 22004 and ZF*** may escape (42501 for a function
outside the lane), and a call that succeeds changes no row outside the caller's own scope.

Logins: a worker of A, an operator of A and a reader of A are the callers; a worker of A and B is
the other login whose attempts, tokens and workers the hostile values name; an operator of every
workspace calls the sweeps and the every-workspace functions, judged by SQLSTATE alone (it may
change anything).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from fence_matrix_support import (
    Outcome,
    build_foreign,
    build_inputs,
    digest,
    install_digest,
    judge,
    lower_caps,
    parse_call,
    signatures,
    text_json,
)
from security_support import CALLS, LANES, Conn, World, api_functions, grant, login_connect

#: lane -> (the calling login, the workspace it is granted (None: every workspace), the lane's role)
CALLERS = {
    "worker": ("pgf_worker_a", "A", "worker"),
    "operator": ("pgf_operator_a", "A", "operator"),
    "reader": ("pgf_reader_a", "A", "reader"),
    "operator of every workspace": ("pgf_operator_b", None, "operator"),
}
OTHER_LOGIN = "pgf_worker_b"


@pytest.fixture
def su(conn: Conn, logins: Any) -> Conn:
    """The superuser connection, with workspaces A and B and exactly the grants the matrix needs."""
    conn.execute("select pgflight.create_workspace('A'), pgflight.create_workspace('B')")
    conn.execute("delete from pgflight.workspace_grants where login like 'pgf\\_%%'")
    for login, ws, lane in CALLERS.values():
        grant(conn, login, ws, lane)
    grant(conn, OTHER_LOGIN, "A", "worker")
    grant(conn, OTHER_LOGIN, "B", "worker")
    return conn


@pytest.fixture
def as_login(dsn: str, logins: Any) -> Iterator[Callable[[str], Conn]]:
    opened: list[Conn] = []

    def _open(login: str) -> Conn:
        c = login_connect(logins.dsn(login, dsn), timeout_s=20)
        opened.append(c)
        return c

    yield _open
    for c in opened:
        c.close()


def _api(su: Conn) -> dict[str, dict[str, bool]]:
    """{function: {lane: may execute}} for every function some lane may execute."""
    by_lane = {lane: api_functions(su, f"pgflight_{lane}") for lane in LANES}
    names = sorted(set().union(*by_lane.values()))
    return {n: {lane: n in by_lane[lane] for lane in LANES} for n in names}


def _may_execute(su: Conn, lane: str, regprocedure: str) -> bool:
    row = su.execute(
        "select has_function_privilege(%s, %s, 'EXECUTE')", [f"pgflight_{lane}", regprocedure]
    ).fetchone()
    return bool(row and row[0])


def test_every_function_a_lane_may_execute_has_a_valid_call_and_known_argument_types(su: Conn) -> None:
    """A function added to the API is in the matrix at once, or this fails until it is given its arguments."""
    api = _api(su)
    assert len(api) > 60
    missing = sorted(set(api) - set(CALLS))
    assert not missing, f"no valid call known for {missing}: add one to security_support.CALLS"
    sigs = signatures(su, list(api))
    assert sorted(sigs) == sorted(api)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("caller", list(CALLERS))
def test_hostile_arguments_never_leak_an_internal_error_or_touch_another_scope(
    su: Conn, as_login: Callable[[str], Conn], caller: str
) -> None:
    """
    As the caller's login, every function of the catalogue with each hostile value: only the API's
    own SQLSTATEs escape, and a call that succeeds changes only rows of the caller's workspaces and
    workers (anything at all for the every-workspace operator).
    """
    login, ws, lane = CALLERS[caller]
    me = as_login(login)
    worker = as_login("pgf_worker_a") if login != "pgf_worker_a" else me
    other = as_login(OTHER_LOGIN)
    text_json(me)
    lower_caps(su)
    install_digest(su, [login])
    foreign = build_foreign(su, worker, other)
    world = World(su=su, me=worker, workspace="A")
    world.worker_id = int(worker.execute("select pgflight.register_worker('matrix')").fetchone()[0])  # type: ignore[index]

    api = _api(su)
    missing = sorted(set(api) - set(CALLS))
    assert not missing, f"no valid call known for {missing}: add one to security_support.CALLS"
    sigs = signatures(su, list(api))
    if ws is None:
        allowed: set[str] | None = None
    elif lane == "reader":
        allowed = set()
    else:
        ws_id = su.execute("select id from pgflight.workspaces where name = %s", [ws]).fetchone()[0]  # type: ignore[index]
        allowed = {f"ws:{ws_id}"} | ({f"login:{login}"} if lane == "worker" else set())

    outcome = Outcome()
    started = time.monotonic()
    spent: dict[str, float] = {}
    for fn in sorted(api):
        t0 = time.monotonic()
        for sig in sigs[fn]:
            query, params = CALLS[fn](world)
            inputs = list(build_inputs(sig, parse_call(fn, query, params), foreign))
            judge(
                me,
                sig.regprocedure,
                inputs,
                executable=_may_execute(su, lane, sig.regprocedure),
                allowed_scopes=allowed,
                baseline=digest(su),
                outcome=outcome,
                reads=sig.reads,
            )
        spent[fn] = time.monotonic() - t0
    took = time.monotonic() - started
    print(f"\nfence matrix, {caller}: {len(api)} functions, {outcome.calls} calls, {took:.1f} s")
    print("slowest:", ", ".join(f"{f} {t:.1f} s" for f, t in sorted(spent.items(), key=lambda x: -x[1])[:8]))
    assert not outcome.failures, f"{len(outcome.failures)} breaches:\n" + "\n".join(outcome.failures)


# --- the holes the matrix found, each on its own ------------------------------------------------


def _state(conn: Conn, query: str, params: list[Any] | None = None) -> str | None:
    try:
        with conn.transaction(force_rollback=True):
            conn.execute(query, params).fetchall()
    except psycopg.Error as e:
        return e.sqlstate
    return None


def test_a_fake_clock_that_is_not_an_instant_is_refused_with_22023(
    su: Conn, as_login: Callable[[str], Conn]
) -> None:
    """A session's pgflight.fake_now that is not an instant: 22023 naming it, not the cast's 22007."""
    me = as_login("pgf_reader_a")
    assert _state(me, "select pgflight._fake_now('')") == "22023"
    assert _state(me, "select pgflight._fake_now(repeat('x', 1000))") == "22023"
    me.execute("set pgflight.fake_now = 'half past never'")
    assert _state(me, "select pgflight._now()") == "22023"
    me.execute("set pgflight.fake_now = '2030-01-01 00:00:00+00'")
    assert me.execute("select pgflight._now() = '2030-01-01 00:00:00+00'").fetchone() == (True,)


def test_cost_by_day_checks_its_day_count_before_computing_the_first_day(
    su: Conn, as_login: Callable[[str], Conn]
) -> None:
    """cost_by_day(2^31-1) is refused with 22023 (the day count's limit), not 22008 from the date."""
    me = as_login("pgf_reader_a")
    assert _state(me, "select * from pgflight.cost_by_day(2147483647)") == "22023"
    assert _state(me, "select * from pgflight.cost_by_day(92)") is None


def test_metrics_snapshot_accepts_a_cursor_at_the_largest_id(
    su: Conn, as_login: Callable[[str], Conn]
) -> None:
    """A cursor within p_max_events of 2^63-1 ends the id window there instead of overflowing (22003)."""
    me = as_login("pgf_reader_a")
    assert _state(me, "select * from pgflight.metrics_snapshot(9223372036854775807)") is None
    assert _state(me, "select * from pgflight.metrics_snapshot(9223372036854775000, 10000000)") is None


def test_approve_caps_the_gate_key_like_request_approval(su: Conn, as_login: Callable[[str], Conn]) -> None:
    """A gate key longer than settings.max_name_bytes: ZF005 naming the cap, not 54000 from the index."""
    me = as_login("pgf_operator_a")
    step = su.execute("select step_id from pgflight.submit_run('A', 'gated', '{}', '{}')").fetchone()[0]  # type: ignore[index]
    assert (
        _state(me, "select * from pgflight.approve(%s, 'approve', 'alice', null, repeat('k', 10000))", [step])
        == "ZF005"
    )
    assert _state(me, "select * from pgflight.approve(%s, 'approve', 'alice', null, 'gate')", [step]) is None


def test_fire_schedules_refuses_a_negative_limit_and_maintain_partitions_takes_a_null_one(
    su: Conn, as_login: Callable[[str], Conn]
) -> None:
    """fire_schedules(-1): 22023 (not 2201W); maintain_partitions(null): no row limit (not 42601)."""
    me = as_login("pgf_operator_b")  # an operator of every workspace: both act on all of them
    assert _state(me, "select pgflight.fire_schedules(-1)") == "22023"
    assert _state(me, "select pgflight.fire_schedules(null)") is None
    assert _state(me, "select * from pgflight.maintain_partitions(null)") is None
