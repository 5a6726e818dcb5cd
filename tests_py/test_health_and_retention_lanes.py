"""
What engine_health shows a login of one workspace, and how long stopped workers stay. Real
logins with scram passwords over TCP, as in the attack suite:

    engine_health   a reader or operator of workspace A sees the step counts of A only and no
                    engine-wide worker count; a reader of every workspace sees them all
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from security_support import Conn, grant, login_connect

LOGIN_OF = {"operator": "pgf_operator_a", "reader": "pgf_reader_a"}
COUNTS = "ready, leased, expired_not_reclaimed, over_deadline_heartbeating, parked, workers_alive"


@pytest.fixture
def su(conn: Conn) -> Conn:
    """The superuser connection, with workspaces A and B and no grants for the test logins."""
    conn.execute("select pgflight.create_workspace('A'), pgflight.create_workspace('B')")
    conn.execute("delete from pgflight.workspace_grants where login like 'pgf\\_%%'")
    return conn


@pytest.fixture
def as_login(dsn: str, logins: Any) -> Iterator[Callable[[str], Conn]]:
    opened: list[Conn] = []

    def _open(login: str) -> Conn:
        c = login_connect(logins.dsn(login, dsn))
        opened.append(c)
        return c

    yield _open
    for c in opened:
        c.close()


@pytest.mark.parametrize("lane", ["reader", "operator"])
def test_a_login_of_one_workspace_sees_no_counts_of_another_in_engine_health(
    su: Conn, as_login: Callable[[str], Conn], lane: str
) -> None:
    """
    Three queued steps in B and a live worker: a login of A reads ready 0 and workers_alive null
    (the engine-wide figure is for every-workspace readers only); one queued step in A then reads 1.
    The superuser, who reads every workspace, sees all four and the worker.
    """
    for _ in range(3):
        su.execute("select * from pgflight.submit_run('B', 'x', '{}')")
    su.execute("select pgflight.register_worker('w-b')")
    login = LOGIN_OF[lane]
    grant(su, login, "A", lane)
    me = as_login(login)
    assert me.execute(f"select {COUNTS} from pgflight.engine_health").fetchone() == (0, 0, 0, 0, 0, None)
    su.execute("select * from pgflight.submit_run('A', 'x', '{}')")
    assert me.execute("select ready from pgflight.engine_health").fetchone() == (1,)
    assert su.execute("select ready, workers_alive from pgflight.engine_health").fetchone() == (4, 1)


def test_a_reader_of_every_workspace_sees_the_engine_wide_counts(
    su: Conn, as_login: Callable[[str], Conn]
) -> None:
    """An every-workspace grant reads every workspace's steps and the live workers."""
    su.execute("select * from pgflight.submit_run('A', 'x', '{}')")
    su.execute("select * from pgflight.submit_run('B', 'x', '{}')")
    su.execute("select pgflight.register_worker('w-b')")
    grant(su, "pgf_reader_a", None, "reader")
    me = as_login("pgf_reader_a")
    assert me.execute("select ready, workers_alive from pgflight.engine_health").fetchone() == (2, 1)
