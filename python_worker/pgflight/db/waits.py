"""
The client of pgflight's waits (docs/waiting.md): timers and event waits a step parks on without a
lease or an attempt spent, and the events that wake them. One Python function per SQL function.
"""

from __future__ import annotations

from typing import Any

from pgflight import models
from pgflight.db.core import Connection, _fenced, _json, _one, _opts, _scalar

__all__ = ["emit_event", "expire_waits", "wait_event", "wait_timer"]


def wait_timer(
    conn: Connection, attempt_id: int, token: int, wait_key: str, seconds: float
) -> models.TimerWait:
    """
    Sleep at timer `wait_key` of the step: elapsed at once when due, else the attempt parks.

    :param seconds: from the first call with this key; a later call keeps the first due time.
    :return: outcome 'elapsed' (waiting False), or waiting True: the attempt parked without a lease
        and the recipe runs again from the top once the timer is due.
    :raises LeaseLost: ZF001. :raises Cancelled: ZF002. :raises BadArgument: 22023 (a key of an event
        wait, negative seconds).
    """
    return _fenced(
        conn,
        attempt_id,
        token,
        "wait_timer",
        lambda: _one(
            conn,
            "select * from pgflight.wait_timer(%s, %s, %s, %s)",
            [attempt_id, token, wait_key, float(seconds)],
            models.TimerWait,
        ),
    )


def wait_event(
    conn: Connection,
    attempt_id: int,
    token: int,
    wait_key: str,
    name: str,
    key: str,
    *,
    timeout_s: float | None = None,
    default: Any = None,
) -> models.EventWait:
    """
    Wait at `wait_key` for the event `name` / `key` of the attempt's workspace.

    :param timeout_s: seconds until the wait times out with `default` (None: no timeout).
    :return: outcome 'received' with the event's payload and id, 'timed_out' with the default, or
        waiting True: the attempt parked and the recipe runs again once the wait has an outcome.
    :raises LeaseLost: ZF001. :raises Cancelled: ZF002.
    """
    return _fenced(
        conn,
        attempt_id,
        token,
        "wait_event",
        lambda: _one(
            conn,
            "select * from pgflight.wait_event(%s, %s, %s, %s, %s, %s)",
            [attempt_id, token, wait_key, name, key, _opts(None, timeout_s=timeout_s, default=default)],
            models.EventWait,
        ),
    )


def emit_event(
    conn: Connection,
    workspace: str,
    name: str,
    key: str,
    payload: Any = None,
    *,
    event_id: str | None = None,
) -> models.EmittedEvent:
    """
    Emit an event: kept for settings.event_retention_s, wakes every step waiting for `name` / `key`.

    :param event_id: idempotency key; the same id again is a no-op (emitted False). Generated when None.
    :return: the event id, whether it was new, how many waits it woke.
    :raises NotFound: ZF003 an unknown workspace or one the login may not emit in.
    """
    return _one(
        conn,
        "select * from pgflight.emit_event(%s, %s, %s, %s, %s)",
        [workspace, name, key, _json(payload), _opts(None, event_id=event_id)],
        models.EmittedEvent,
    )


def expire_waits(conn: Connection, *, limit: int = 1000) -> int:
    """Sweep: resolve due timers and timed-out event waits, delete old events. :return: count."""
    return int(_scalar(conn, "select pgflight.expire_waits(%s)", [limit]))
