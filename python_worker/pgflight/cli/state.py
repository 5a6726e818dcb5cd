"""
What the CLI shows about work that is not moving: each step's state as a person reads it, the
live workers and what they hold, the pending approval gates, and the recipes no live worker
serves. Read through the reader views (``step_status``, ``attempts``) and the read functions
(``worker_list``, ``pending_approvals``, ``run_waits``, ``unserved_recipes``): an operator's or a
reader's DSN shows the same, limited to the workspaces the login may read.

States (:func:`step_state`): ``running`` (claimed, running, cancel_requested), ``queued`` (ready,
waiting for a worker), ``waiting (backoff)`` (a retry not yet due), ``waiting (delay)`` (submitted
with ``--delay``), ``waiting (approval)``, ``waiting (event NAME:KEY)``, ``waiting (sleep until
TIME)`` (a timer or an event wait, docs/waiting.md), ``waiting (children)``, or the final status.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final, TypeVar

import psycopg
from psycopg.rows import class_row
from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

#: A worker not seen for this long is stale (the window of view ``engine_health`` and ``worker_list``).
LIVE_S: Final = 60
#: Most workers ``pgflight workers`` lists (``worker_list``'s ceiling).
WORKERS_LIMIT: Final = 1000
#: Most gates ``pgflight approvals`` lists across runs (``pending_approvals``' ceiling).
GATES_LIMIT: Final = 1000
RUN_WAITS: Final = "select attempt_id, kind, event_name, event_key, due_at from pgflight.run_waits(%s)"
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
    alive: bool
    now: datetime
    holds: list[int]

    @property
    def state(self) -> str:
        """``alive``, ``stale`` (not seen for :data:`LIVE_S` seconds) or ``stopped``."""
        if self.stopped_at is not None:
            return "stopped"
        return "alive" if self.alive else "stale"


class WaitRow(BaseModel):
    """A pending wait of a parked step (``run_waits``)."""

    attempt_id: int
    kind: str
    event_name: str | None
    event_key: str | None
    due_at: datetime | None


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
    labels = wait_labels(conn, run_id) if any(s.status == "awaiting_approval" for s in steps) else {}
    for s in steps:
        s.wait = labels.get(s.attempt_id or 0)
    return steps


def wait_labels(conn: psycopg.Connection[Any], run_id: int) -> dict[int, str]:
    """
    What each parked attempt of run `run_id` waits for besides a gate, as ``event NAME:KEY`` or
    ``sleep until TIME`` (UTC), from ``run_waits``.

    :return: attempt id -> label, for the attempts parked on a pending timer or event wait.
    """
    labels: dict[int, str] = {}
    for w in _rows(conn, RUN_WAITS + " where kind <> 'approval'", [run_id], WaitRow):
        if w.kind == "event":
            labels[w.attempt_id] = f"event {w.event_name}:{w.event_key}"
        elif w.due_at is not None:
            labels[w.attempt_id] = f"sleep until {w.due_at.astimezone(UTC):%Y-%m-%d %H:%M:%S}"
    return labels


def unserved(conn: psycopg.Connection[Any], recipes: list[str]) -> list[str]:
    """The recipes among `recipes` that no live worker serves (``unserved_recipes``)."""
    if not recipes:
        return []
    names = sorted(set(recipes))[:1000]
    return [r[0] for r in conn.execute("select * from pgflight.unserved_recipes(%s)", [names]).fetchall()]


def workers(conn: psycopg.Connection[Any], *, include_stopped: bool) -> list[WorkerRow]:
    """
    Workers (``worker_list``: live ones, and those seen in the last hour), not the stopped ones
    unless asked, with the steps they hold a lease on.
    """
    rows = conn.execute(
        "select w.worker_id, w.name, w.hostname, w.pid, w.recipes, w.started_at, w.last_seen_at,"
        "       w.stopped_at, w.alive, now() as now, w.held"
        "  from pgflight.worker_list(%s) w order by w.worker_id",
        [WORKERS_LIMIT],
    ).fetchall()
    return [
        WorkerRow(
            worker_id=r[0],
            name=r[1],
            hostname=r[2],
            pid=r[3],
            recipes=r[4],
            started_at=r[5],
            last_seen_at=r[6],
            stopped_at=r[7],
            alive=r[8],
            now=r[9],
            holds=sorted({h["step_id"] for h in r[10] or []}),
        )
        for r in rows
        if include_stopped or r[7] is None
    ]


def pending_gates(conn: psycopg.Connection[Any], run_id: int | None = None) -> list[GateRow]:
    """
    Approval gates a step waits on, oldest request first: every workspace's the login may read
    (``pending_approvals``, at most :data:`GATES_LIMIT`), or one run's (``run_waits``).
    """
    if run_id is None:
        return _rows(
            conn,
            "select step_id, run_id, step_key, recipe, gate_key, request, default_decision, requested_at,"
            "       expires_at from pgflight.pending_approvals(%s)",
            [GATES_LIMIT],
            GateRow,
        )
    return _rows(
        conn,
        "select step_id, %s::bigint as run_id, step_key, recipe, gate_key, request, default_decision,"
        "       requested_at, expires_at"
        "  from pgflight.run_waits(%s) where kind = 'approval'"
        " order by requested_at nulls last, step_id",
        [run_id, run_id],
        GateRow,
    )
