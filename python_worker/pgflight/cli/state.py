"""
What the CLI shows about work that is not moving: each step's state as a person reads it, the
live workers and what they hold, the pending approval gates, and the recipes no live worker
serves. Read through the reader views (``step_status``, ``attempts``) and, for workers and gates,
the tables ``workers`` and ``approvals`` (an operator's DSN; a reader gets a one-line refusal).

States (:func:`step_state`): ``running`` (claimed, running, cancel_requested), ``queued`` (ready,
waiting for a worker), ``waiting (backoff)`` (a retry not yet due), ``waiting (delay)`` (submitted
with ``--delay``), ``waiting (approval)``, ``waiting (event NAME:KEY)``, ``waiting (sleep until
TIME)`` (a timer or an event wait, docs/waiting.md; read from table ``waits``, so a reader's DSN
shows ``waiting (approval)`` for them), ``waiting (children)``, or the final status.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final, TypeVar

import psycopg
from psycopg.rows import class_row
from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

#: A worker not seen for this long is stale (the window of view ``engine_health``).
LIVE_S: Final = 60
LEASED: Final = ("claimed", "running", "cancel_requested")
LIVE: Final = (*LEASED, "queued", "awaiting_children", "awaiting_approval")
# run state: the most active state among its live steps
_PRECEDENCE: Final = (
    "running",
    "queued",
    "waiting (approval)",
    "waiting (event",
    "waiting (sleep",
    "waiting (backoff)",
    "waiting (delay)",
    "waiting (children)",
)


class LiveStep(BaseModel):
    """A step with a live attempt, and the error of the attempt before it."""

    step_id: int
    attempt_id: int | None = None
    recipe: str
    status: str
    attempt_no: int
    available_after: datetime
    now: datetime
    last_error: Any
    wait: str | None = None

    @property
    def state(self) -> str:
        """The state as a person reads it (see the module docstring)."""
        return step_state(self.status, self.attempt_no, self.available_after, self.now, self.wait)


class WorkerRow(BaseModel):
    """A worker process as ``pgflight workers`` shows it."""

    worker_id: int
    name: str
    hostname: str | None
    pid: int | None
    recipes: list[str] | None
    started_at: datetime
    last_seen_at: datetime
    stopped_at: datetime | None
    now: datetime
    holds: list[int]

    @property
    def state(self) -> str:
        """``alive``, ``stale`` (not seen for :data:`LIVE_S` seconds) or ``stopped``."""
        if self.stopped_at is not None:
            return "stopped"
        return "stale" if (self.now - self.last_seen_at).total_seconds() > LIVE_S else "alive"


class GateRow(BaseModel):
    """A pending approval gate."""

    step_id: int
    run_id: int
    step_key: str
    recipe: str
    gate_key: str
    request: Any
    default_decision: str
    requested_at: datetime | None
    expires_at: datetime | None


def _rows(conn: psycopg.Connection[Any], query: str, params: list[Any], model: type[M]) -> list[M]:
    with conn.cursor(row_factory=class_row(model)) as cur:
        return cur.execute(query, params).fetchall()


def step_state(
    status: str, attempt_no: int, available_after: datetime | None, now: datetime, wait: str | None = None
) -> str:
    """A step's state from its latest attempt and the wait it is parked on (see the module docstring)."""
    if status in LEASED:
        return "running"
    if status == "queued":
        if available_after is not None and available_after > now:
            return "waiting (backoff)" if attempt_no > 1 else "waiting (delay)"
        return "queued"
    if status == "awaiting_approval":
        return f"waiting ({wait})" if wait else "waiting (approval)"
    if status == "awaiting_children":
        return "waiting (children)"
    return status


def run_state(status: str, steps: list[LiveStep]) -> str:
    """A run's state: its status once finished, else the most active state of its live steps."""
    if status != "running":
        return status
    states = {s.state for s in steps}
    for p in _PRECEDENCE:
        if p.endswith(")"):
            if p in states:
                return p
        else:  # a family ("waiting (event" …): its first state in step order
            hit = next((s.state for s in steps if s.state.startswith(p)), None)
            if hit:
                return hit
    return "running"


def live_steps(conn: psycopg.Connection[Any], run_id: int) -> list[LiveStep]:
    """
    The run's steps with a live attempt, with the previous attempt's error (a retry's cause) and,
    for a parked one, the timer or event it waits for (:func:`wait_labels`).
    """
    steps = _rows(
        conn,
        "select st.step_id, st.attempt_id, st.recipe, st.status, st.attempt_no, a.available_after,"
        "       now() as now,"
        "       prev.error as last_error"
        "  from pgflight.step_status st"
        "  join pgflight.attempts a on a.attempt_id = st.attempt_id"
        "  left join pgflight.attempts prev"
        "    on prev.step_id = st.step_id and prev.attempt_no = st.attempt_no - 1"
        " where st.run_id = %s and st.status = any(%s)"
        " order by st.step_id",
        [run_id, list(LIVE)],
        LiveStep,
    )
    labels = wait_labels(
        conn, [s.attempt_id for s in steps if s.status == "awaiting_approval" and s.attempt_id]
    )
    for s in steps:
        s.wait = labels.get(s.attempt_id or 0)
    return steps


def wait_labels(conn: psycopg.Connection[Any], attempt_ids: list[int]) -> dict[int, str]:
    """
    What each parked attempt waits for, as ``event NAME:KEY`` or ``sleep until TIME`` (UTC).

    :return: attempt id -> label, for the attempts parked on a pending timer or event wait; empty
        when this DSN may not read ``pgflight.waits`` (the step then reads ``waiting (approval)``).
    """
    if not attempt_ids:
        return {}
    try:
        with conn.transaction():
            rows = conn.execute(
                "select w.parked_attempt_id, w.kind, w.event_name, w.event_key, w.due_at"
                "  from pgflight.waits w"
                " where w.parked_attempt_id = any(%s) and w.outcome is null",
                [attempt_ids],
            ).fetchall()
    except psycopg.errors.InsufficientPrivilege:
        return {}
    labels: dict[int, str] = {}
    for attempt_id, kind, name, key, due_at in rows:
        if kind == "event":
            labels[attempt_id] = f"event {name}:{key}"
        else:
            labels[attempt_id] = f"sleep until {due_at.astimezone(UTC):%Y-%m-%d %H:%M:%S}"
    return labels


def unserved(conn: psycopg.Connection[Any], recipes: list[str]) -> list[str] | None:
    """
    The recipes among `recipes` that no live worker serves.

    :return: None when this DSN may not read ``pgflight.workers``.
    """
    if not recipes:
        return []
    try:
        with conn.transaction():
            rows = conn.execute(
                "select r.recipe from unnest(%s::text[]) r(recipe)"
                " where not exists (select 1 from pgflight.workers w"
                "   where w.stopped_at is null and w.last_seen_at > now() - make_interval(secs => %s)"
                "     and (w.recipes is null or r.recipe = any(w.recipes)))"
                " order by 1",
                [sorted(set(recipes)), LIVE_S],
            ).fetchall()
    except psycopg.errors.InsufficientPrivilege:
        return None
    return [r[0] for r in rows]


def workers(conn: psycopg.Connection[Any], *, include_stopped: bool) -> list[WorkerRow]:
    """Workers (not stopped, unless asked) with the steps they hold a lease on."""
    return _rows(
        conn,
        "with held as (select worker_id, array_agg(step_id order by step_id) as steps"
        "                from pgflight.attempts where status = any(%s) group by worker_id)"
        "select w.id as worker_id, w.name, w.hostname, w.pid, w.recipes, w.started_at,"
        "       w.last_seen_at, w.stopped_at, now() as now, coalesce(h.steps, '{}') as holds"
        "  from pgflight.workers w left join held h on h.worker_id = w.id"
        " where %s or w.stopped_at is null"
        " order by w.id",
        [list(LEASED), include_stopped],
        WorkerRow,
    )


def pending_gates(conn: psycopg.Connection[Any], run_id: int | None = None) -> list[GateRow]:
    """Approval gates a step waits on (oldest request first)."""
    return _rows(
        conn,
        "select g.step_id, st.run_id, st.step_key, st.recipe, g.gate_key, g.request,"
        "       g.default_decision, g.requested_at, g.expires_at"
        "  from pgflight.approvals g join pgflight.step_status st on st.step_id = g.step_id"
        " where g.decision is null and st.status = 'awaiting_approval'"
        "   and (%s::bigint is null or st.run_id = %s)"
        " order by g.requested_at nulls last, g.step_id",
        [run_id, run_id],
        GateRow,
    )
