"""
Waits and events across tenants, as real logins over scram: a worker of workspace A waits for an
event; who may emit it. An operator or a worker login of A may; a worker or operator of B, naming
A, gets the answer of an unknown workspace (ZF003) and wakes nothing; a reader may not call
emit_event at all (42501). What the step receives is only what an emit into its own workspace
carried: an event of the same name and key in B is not seen in A. The events log names the wait
and the event id, never the payload.
"""

from __future__ import annotations

from collections.abc import Callable

import psycopg
import pytest

from security_support import Conn, World, grant
from test_security_attacks import as_login, su  # noqa: F401  (fixtures)


def _state(conn: Conn, query: str, params: list[object]) -> str | None:
    try:
        conn.execute(query, params)
    except psycopg.Error as e:
        return e.sqlstate
    return None


EMIT = "select * from pgflight.emit_event(%s, 'order.paid', '42', '{\"usd\": 1}')"


def test_only_the_workspaces_own_logins_may_emit_its_events(
    su: Conn, as_login: Callable[[str], Conn]
) -> None:
    grant(su, "pgf_worker_a", "A", "worker")
    grant(su, "pgf_operator_a", "A", "operator")
    grant(su, "pgf_reader_a", "A", "reader")
    grant(su, "pgf_worker_b", "B", "worker")
    grant(su, "pgf_operator_b", "B", "operator")
    me = as_login("pgf_worker_a")
    world = World(su=su, me=me, workspace="A")
    world.worker_id = int(me.execute("select pgflight.register_worker('waiter')").fetchone()[0])  # type: ignore[index]
    held = world.held()
    row = me.execute(
        "select waiting from pgflight.wait_event(%s, %s, 'paid', 'order.paid', '42')",
        [held["attempt_id"], held["token"]],
    ).fetchone()
    assert row == (True,)

    # B's logins naming A: the answer of a workspace that does not exist; nothing woken or kept
    for login in ("pgf_worker_b", "pgf_operator_b"):
        other = as_login(login)
        assert _state(other, EMIT, ["A"]) == "ZF003", login
        assert _state(other, EMIT, ["no-such-workspace"]) == "ZF003", login
    assert _state(as_login("pgf_reader_a"), EMIT, ["A"]) == "42501"
    # an event of the same name and key in B does not reach A's wait
    got = as_login("pgf_worker_b").execute(EMIT.replace("1}", "666}"), ["B"]).fetchone()
    assert got is not None and got[2] == 0
    assert su.execute(
        "select count(*) from pgflight.emitted_events e join pgflight.workspaces w"
        " on w.id = e.workspace_id where w.name = 'A'"
    ).fetchone() == (0,)
    status = su.execute(
        "select status from pgflight.step_status where step_id = %s", [held["step_id"]]
    ).fetchone()
    assert status == ("awaiting_approval",)

    # A's operator emits: the wait receives A's payload
    got = as_login("pgf_operator_a").execute(EMIT, ["A"]).fetchone()
    assert got is not None and got[1:] == (True, 1)
    wait = su.execute(
        "select outcome, payload from pgflight.waits where step_id = %s", [held["step_id"]]
    ).fetchone()
    assert wait == ("received", {"usd": 1})
    details = [
        r[0]
        for r in su.execute(
            "select detail::text from pgflight.run_events where step_id = %s and reason like 'wait%%'",
            [held["step_id"]],
        ).fetchall()
    ]
    assert details and all("usd" not in d for d in details)

    # a worker login of A may emit too (one recipe signalling another run)
    got = me.execute(EMIT.replace("'42'", "'43'"), ["A"]).fetchone()
    assert got is not None and got[1] is True


@pytest.mark.parametrize("lane", ["pgf_worker_a", "pgf_operator_a"])
def test_expire_waits_is_for_an_operator_of_every_workspace(
    su: Conn, as_login: Callable[[str], Conn], lane: str
) -> None:
    grant(su, lane, "A", lane.split("_")[1])
    expected = "ZF012" if lane == "pgf_operator_a" else "42501"
    assert _state(as_login(lane), "select pgflight.expire_waits(10)", []) == expected
