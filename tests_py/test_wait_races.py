"""
Races of waits on real connections (core_helpers.race: both calls released together, and each
one holding its transaction open while the other is seen waiting on its lock):

- an event emitted while a wait for it is being registered: the wait ends received either way
  (it sees the event, or the emit sees and wakes it); no wake-up is lost;
- two emitters of one name and key: the parked wait records one outcome, the first emit's;
- a timer coming due (the sweep) while its step is being cancelled: the step ends cancelled and
  nothing requeues it.
"""

# ruff: noqa: B023  (each lambda runs within its own loop iteration, inside race())

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from psycopg.types.json import Jsonb

from core_helpers import (
    ORDERS,
    Conn,
    claim_one,
    invariant_violations,
    race,
    register,
    rows,
    scalar,
    set_clock,
    setup_engine,
    submit,
)

ConnectFactory = Callable[..., Conn]
ITERATIONS = 30  # per race; the orders rotate, so each order runs 10 times


@pytest.fixture
def trio(conn: Conn, connect: ConnectFactory) -> tuple[Conn, Conn, Conn]:
    """Two racing connections and an observer, all on one fake instant, with a workspace."""
    setup_engine(conn)
    a, b = connect(10), connect(10)
    for c in (a, b, conn):
        set_clock(c, 0)
    return a, b, conn


def _wait(conn: Conn, attempt_id: int, token: int, key: str) -> dict[str, Any]:
    got = rows(
        conn,
        "select * from pgflight.wait_event(%s, %s, 'paid', 'order.paid', %s)",
        [attempt_id, token, key],
    )
    return got[0]


def _emit(conn: Conn, key: str, payload: Any, event_id: str) -> dict[str, Any]:
    got = rows(
        conn,
        "select * from pgflight.emit_event('core', 'order.paid', %s, %s, %s)",
        [key, Jsonb(payload), Jsonb({"event_id": event_id})],
    )
    return got[0]


def _step_status(conn: Conn, step_id: int) -> str:
    return str(scalar(conn, "select status from pgflight.step_status where step_id = %s", [step_id]))


def test_an_event_emitted_while_the_wait_is_registered_wakes_it(trio: tuple[Conn, Conn, Conn]) -> None:
    a, b, obs = trio
    w = register(obs, "w")
    seen_blocked = 0
    for i in range(ITERATIONS):
        order = ORDERS[i % 3]
        s = submit(obs, f"pay{i}")  # a recipe per round: a woken step of an earlier round stays queued
        c = claim_one(obs, w, recipes=[f"pay{i}"])
        key = f"k{i}"
        oa, ob, blocked = race(
            lambda: _wait(a, c.attempt_id, c.token, key),
            a,
            lambda: _emit(b, key, {"i": i}, f"e{i}"),
            b,
            order=order,
            observer=obs,
        )
        seen_blocked += blocked
        assert oa.error is None and ob.error is None, (order, oa, ob)
        wait = rows(obs, "select outcome, payload from pgflight.waits where step_id = %s", [s.step_id])[0]
        assert wait == {"outcome": "received", "payload": {"i": i}}, (order, wait)
        if oa.value["waiting"]:  # it parked: the emit must have seen it and woken it
            assert ob.value["woken"] == 1, (order, oa, ob)
            assert _step_status(obs, s.step_id) == "queued", order
        else:  # it saw the event at once and keeps running
            assert (oa.value["outcome"], oa.value["payload"]) == ("received", {"i": i})
            assert ob.value["woken"] == 0
            assert _step_status(obs, s.step_id) == "running", order
    assert seen_blocked > 0  # the held orders really made one side wait on the channel row
    assert invariant_violations(obs) == {}


def test_two_emitters_of_one_event_name_and_key_record_one_outcome(trio: tuple[Conn, Conn, Conn]) -> None:
    a, b, obs = trio
    w = register(obs, "w")
    for i in range(ITERATIONS):
        order = ORDERS[i % 3]
        s = submit(obs, f"pay{i}")  # a recipe per round: a woken step of an earlier round stays queued
        c = claim_one(obs, w, recipes=[f"pay{i}"])
        key = f"k{i}"
        assert _wait(obs, c.attempt_id, c.token, key)["waiting"] is True
        oa, ob, _ = race(
            lambda: _emit(a, key, {"by": "a"}, f"a{i}"),
            a,
            lambda: _emit(b, key, {"by": "b"}, f"b{i}"),
            b,
            order=order,
            observer=obs,
        )
        assert oa.error is None and ob.error is None, (order, oa, ob)
        assert sorted([oa.value["woken"], ob.value["woken"]]) == [0, 1], (order, oa, ob)
        winner = "a" if oa.value["woken"] == 1 else "b"
        wait = rows(
            obs, "select outcome, payload, event_id from pgflight.waits where step_id = %s", [s.step_id]
        )
        assert wait == [{"outcome": "received", "payload": {"by": winner}, "event_id": f"{winner}{i}"}], order
        resolved = scalar(
            obs,
            "select count(*) from pgflight.run_events where step_id = %s and reason = 'wait_resolved'",
            [s.step_id],
        )
        assert resolved == 1, order
        assert _step_status(obs, s.step_id) == "queued"
    assert invariant_violations(obs) == {}


def test_a_timer_due_while_its_step_is_cancelled_leaves_it_cancelled(trio: tuple[Conn, Conn, Conn]) -> None:
    a, b, obs = trio
    w = register(obs, "w")
    for i in range(ITERATIONS):
        order = ORDERS[i % 3]
        for c_ in (a, b, obs):
            set_clock(c_, 100 * i)
        s = submit(obs, f"nap{i}")
        c = claim_one(obs, w, recipes=[f"nap{i}"])
        got = rows(obs, "select * from pgflight.wait_timer(%s, %s, 'nap', 10)", [c.attempt_id, c.token])
        assert got[0]["waiting"] is True
        set_clock(b, 100 * i + 10)  # the sweep's clock: the timer is due
        oa, ob, _ = race(
            lambda: rows(a, "select * from pgflight.cancel_step(%s, 'alice', 'stop')", [s.step_id]),
            a,
            lambda: scalar(b, "select pgflight.expire_waits(1000)"),
            b,
            order=order,
            observer=obs,
        )
        assert oa.error is None and ob.error is None, (order, oa, ob)
        assert _step_status(obs, s.step_id) == "cancelled", (order, oa, ob)
        live = scalar(
            obs,
            "select count(*) from pgflight.step_attempts where step_id = %s and status <> 'cancelled'",
            [s.step_id],
        )
        assert live == 0, order
        # the sweep resolved the timer now or resolves it at the next pass; either way, once
        set_clock(b, 100 * i + 11)
        scalar(b, "select pgflight.expire_waits(1000)")
        assert rows(obs, "select outcome from pgflight.waits where step_id = %s", [s.step_id]) == [
            {"outcome": "elapsed"}
        ]
        assert _step_status(obs, s.step_id) == "cancelled"
    assert invariant_violations(obs) == {}
