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

import pytest

from fence_matrix_support import (
    Outcome,
    build_foreign,
    build_inputs,
    digest,
    install_digest,
    judge,
    parse_call,
    signatures,
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
    for fn in sorted(api):
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
            )
    took = time.monotonic() - started
    print(f"\nfence matrix, {caller}: {len(api)} functions, {outcome.calls} calls, {took:.1f} s")
    assert not outcome.failures, f"{len(outcome.failures)} breaches:\n" + "\n".join(outcome.failures)
