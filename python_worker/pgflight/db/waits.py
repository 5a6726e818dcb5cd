"""
The client of pgflight's waits (docs/waiting.md): timers and event waits a step parks on without a
lease or an attempt spent, the events that wake them, and the tool policies that park an agent's
tool call on an approval. One Python function per SQL function.
"""

from __future__ import annotations

from typing import Any

from pgflight import models
from pgflight.db.core import Connection, _fenced, _json, _one, _opts, _rows, _scalar

__all__ = [
    "drop_tool_policy",
    "emit_event",
    "expire_waits",
    "set_tool_policy",
    "tool_policies",
    "wait_event",
    "wait_timer",
]


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


def set_tool_policy(
    conn: Connection,
    workspace: str,
    tool: str,
    action: str,
    *,
    when: str | None = None,
    over_usd: float | None = None,
) -> models.ToolPolicy:
    """
    Set a workspace's policy for an agent tool (``"*"``: every tool without its own policy).

    :param action: 'allow', 'deny' or 'require_approval'; applied by mark_tool_call before the
        tool runs.
    :param when: a JSON path on the call's arguments; the action applies only when it matches.
    :param over_usd: the action applies only once the agent run has spent this many USD.
    :return: the policy now in force.
    :raises BadArgument: 22023. :raises NotFound: ZF003. :raises CapExceeded: ZF005.
    :raises Forbidden: ZF012 not an operator of the workspace.
    """
    policy: dict[str, Any] = {"action": action}
    if when is not None:
        policy["when"] = when
    if over_usd is not None:
        policy["over_usd"] = over_usd
    return _one(
        conn,
        "select * from pgflight.set_tool_policy(%s, %s, %s)",
        [workspace, tool, _json(policy)],
        models.ToolPolicy,
    )


def drop_tool_policy(conn: Connection, workspace: str, tool: str) -> bool:
    """Remove a workspace's policy for a tool. :return: whether there was one."""
    return bool(_scalar(conn, "select pgflight.drop_tool_policy(%s, %s)", [workspace, tool]))


def tool_policies(conn: Connection, workspace: str) -> list[models.ToolPolicy]:
    """A workspace's tool policies, by tool name."""
    return _rows(conn, "select * from pgflight.tool_policies(%s)", [workspace], models.ToolPolicy)
