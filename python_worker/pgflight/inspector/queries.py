"""
Every read and action of the inspector, as SQL on the reader lane: views (`step_status`,
`attempts`, `run_events`) and read functions (`run_list_page`, `run_status`, `run_audit`,
`dead_letter_page`, `pending_approvals`, `worker_list`, `queue_depths`, `cost_by_day`,
`agent_run_of`, `agent_transcript`), never a table. Actions call the operator API
(`retry_step`, `replay_from`, `cancel_run`, `approve`) and leave the actor to the database
(`session_user`: the login role), so the events log names who acted.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

Conn = psycopg.Connection[Any]
Row = dict[str, Any]

PAGE = 50
MAX_STEPS = 2000  # steps drawn in a run's tree; the rest are counted, not drawn
MAX_EVENTS = 300  # events shown on a page; a step's page shows its own
MAX_CHILDREN = 500


def _rows(conn: Conn, query: str, params: Any = None) -> list[Row]:
    """Every row of `query` as a dict keyed by column name."""
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(query, params)
        return cur.fetchall()


def _one(conn: Conn, query: str, params: Any = None) -> Row | None:
    """The first row of `query`, or None when it returns none."""
    got = _rows(conn, query, params)
    return got[0] if got else None


def whoami(conn: Conn) -> tuple[str, bool]:
    """The login role and whether it is in the operator lane."""
    row = conn.execute(
        "select session_user::text, pg_has_role(session_user, 'pgflight_operator', 'member')"
    ).fetchone()
    assert row is not None
    return str(row[0]), bool(row[1])


def runs_page(conn: Conn, after: int | None, filters: dict[str, str]) -> list[Row]:
    """One page of runs (newest first) after run id `after`, with the run_list_page filters."""
    return _rows(conn, "select * from pgflight.run_list_page(%s, %s, %s)", [after, PAGE + 1, Jsonb(filters)])


def run(conn: Conn, run_id: int) -> Row | None:
    """run_status of a run, or None when there is no such run."""
    try:
        return _one(conn, "select * from pgflight.run_status(%s)", [run_id])
    except psycopg.Error as e:
        if e.sqlstate == "ZF003":
            return None
        raise


def run_row(conn: Conn, run_id: int) -> Row | None:
    """The run's row as the runs list shows it (state, duration, cost)."""
    row = _one(conn, "select * from pgflight.run_list_page(%s, 1, '{}')", [run_id + 1])
    return row if row and row["run_id"] == run_id else None


def run_audit(conn: Conn, run_id: int) -> Row | None:
    """run_audit of a run: its invariant checks (one row)."""
    return _one(conn, "select * from pgflight.run_audit(%s)", [run_id])


def run_steps(conn: Conn, run_id: int) -> list[Row]:
    """The run's steps with their latest attempt (at most MAX_STEPS + 1, by depth then id)."""
    return _rows(
        conn,
        "select step_id, parent_id, depth, step_key, recipe, attempt_id, attempt_no, status,"
        " failed_attempts, max_attempts, worker_id, claimed_at, started_at, finished_at, reason,"
        " children_pending, created_at"
        " from pgflight.step_status where run_id = %s order by depth, step_id limit %s",
        [run_id, MAX_STEPS + 1],
    )


def run_events(conn: Conn, run_id: int, step_id: int | None = None) -> list[Row]:
    """The run's transitions in order (only one step's with `step_id`), at most MAX_EVENTS + 1."""
    return _rows(
        conn,
        "select id, at, step_id, attempt_id, from_status, to_status, worker_id, actor, reason, detail"
        " from pgflight.run_events where run_id = %s and (%s::bigint is null or step_id = %s)"
        " order by id limit %s",
        [run_id, step_id, step_id, MAX_EVENTS + 1],
    )


def step(conn: Conn, step_id: int) -> Row | None:
    """A step's step_status row (latest attempt), or None outside the reader's workspaces."""
    return _one(conn, "select * from pgflight.step_status where step_id = %s", [step_id])


def attempts(conn: Conn, step_id: int) -> list[Row]:
    """Every attempt of a step, first first (fencing_token included: the page shows it to operators)."""
    return _rows(conn, "select * from pgflight.attempts where step_id = %s order by attempt_no", [step_id])


def attempt(conn: Conn, attempt_id: int) -> Row | None:
    """One attempt's row of the attempts view, or None."""
    return _one(conn, "select * from pgflight.attempts where attempt_id = %s", [attempt_id])


def children(conn: Conn, step_id: int) -> list[Row]:
    """A step's children by id, at most MAX_CHILDREN + 1 (the page says when there are more)."""
    return _rows(
        conn,
        "select step_id, step_key, recipe, status, attempt_no, started_at, finished_at, children_pending"
        " from pgflight.step_status where parent_id = %s order by step_id limit %s",
        [step_id, MAX_CHILDREN + 1],
    )


def agent_of(conn: Conn, step_id: int) -> Row | None:
    """The agent run of an agent step (tokens, USD, iterations), or None for a recipe step."""
    row = _one(conn, "select * from pgflight.agent_run_of(%s)", [step_id])
    return row if row and row["agent_run_id"] is not None else None


def transcript(conn: Conn, agent_run_id: int) -> list[Row]:
    """An agent run's transcript: model calls and tool calls in order."""
    return _rows(conn, "select * from pgflight.agent_transcript(%s)", [agent_run_id])


def fork_links(conn: Conn, run_id: int, step_id: int) -> tuple[Row | None, list[Row]]:
    """
    Where an agent step was forked from (its 'forked' event: from_step, at_iteration, note, actor)
    and the forks made of it ('fork_made' events: fork_step, at_iteration, note, actor), from the
    events log the reader may read.
    """
    rows = _rows(
        conn,
        "select reason, actor, at, detail from pgflight.run_events"
        " where run_id = %s and step_id = %s and reason in ('forked', 'fork_made') order by id limit %s",
        [run_id, step_id, MAX_EVENTS],
    )
    origin = next(
        ({**r["detail"], "actor": r["actor"], "at": r["at"]} for r in rows if r["reason"] == "forked"), None
    )
    made = [{**r["detail"], "actor": r["actor"], "at": r["at"]} for r in rows if r["reason"] == "fork_made"]
    return origin, made


def dead_letters(conn: Conn, after: int | None) -> list[Row]:
    """One page of dead-lettered steps after step id `after` (PAGE + 1 rows: one more says a next page)."""
    return _rows(conn, "select * from pgflight.dead_letter_page(%s, %s)", [after, PAGE + 1])


def approvals(conn: Conn) -> list[Row]:
    """Approval gates waiting for a decision, at most 500."""
    return _rows(conn, "select * from pgflight.pending_approvals(500)")


def workers(conn: Conn) -> list[Row]:
    """Registered workers with their last heartbeat and leased attempts, at most 500."""
    return _rows(conn, "select * from pgflight.worker_list(500)")


def queues(conn: Conn) -> list[Row]:
    """Ready, leased, waiting and dead-letter counts per workspace and recipe."""
    return _rows(conn, "select * from pgflight.queue_depths()")


def costs(conn: Conn, days: int) -> list[Row]:
    """Spend per day (USD, tokens) per workspace over the last `days` days."""
    return _rows(conn, "select * from pgflight.cost_by_day(%s)", [days])


# --- actions (operator lane) -------------------------------------------------------------------


def retry(conn: Conn, step_id: int, note: str) -> None:
    """retry_step as the session login (operator lane); raises the database error (ZF…, 42501)."""
    conn.execute("select pgflight.retry_step(%s, null, %s)", [step_id, note])


def replay(conn: Conn, step_id: int, note: str) -> None:
    """replay_from as the session login (operator lane)."""
    conn.execute("select pgflight.replay_from(%s, null, %s)", [step_id, note])


def cancel(conn: Conn, run_id: int, note: str) -> None:
    """cancel_run as the session login (operator lane)."""
    conn.execute("select * from pgflight.cancel_run(%s, null, %s)", [run_id, note])


def decide(
    conn: Conn, step_id: int, decision: str, note: str, gate_key: str | None = None, payload: Any = None
) -> None:
    """
    approve (decision 'approve' or 'reject') as the session login (operator lane), at `gate_key`
    (None: the step's pending gate), with an optional payload (a tool gate's edited arguments).
    """
    conn.execute(
        "select * from pgflight.approve(%s, %s, null, %s, %s, %s)",
        [step_id, decision, note, gate_key, None if payload is None else Jsonb(payload)],
    )
