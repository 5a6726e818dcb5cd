"""
The typed client of pgflight's SQL API: one Python function per SQL function.

Each function takes a psycopg :class:`~psycopg.Connection` first (autocommit: each call is its own
short transaction; see :mod:`pgflight.db.connection` for connections that are safe behind
PgBouncer) and returns pydantic models from :mod:`pgflight.models` mirroring the returned columns.
Server errors with pgflight's SQLSTATEs are raised as :mod:`pgflight.errors` classes.

A fenced worker write (start, complete, fail, release, spawn, approval request) that the server
refuses with :class:`~pgflight.errors.LeaseLost` or :class:`~pgflight.errors.Cancelled` changed
nothing, not even the log: the client then calls ``record_stale_write`` in a new transaction on
the same connection so the refusal is on record (scenario C02), and re-raises.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, TypeVar

import psycopg
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from pydantic import BaseModel, TypeAdapter

from pgflight import errors, models, tracing

__all__ = [
    "approve",
    "cancel_run",
    "cancel_step",
    "children_results",
    "claim_batch",
    "complete_and_claim",
    "complete_batch",
    "complete_step",
    "complete_step_text",
    "create_workspace",
    "dead_letters",
    "deregister_worker",
    "expire_approvals",
    "fail_step",
    "fail_step_text",
    "find_effect",
    "heartbeat",
    "install_schedules",
    "list_runs",
    "note_stale_write",
    "purge_finished",
    "reclaim_expired",
    "record_effect",
    "record_stale_write",
    "register_worker",
    "release_step",
    "replay_from",
    "request_approval",
    "retry_step",
    "run_events",
    "run_status",
    "run_steps",
    "run_sweeps",
    "run_trace_context",
    "server_now",
    "spawn_children",
    "start_step",
    "submit_many",
    "submit_run",
    "translated",
    "wake_parents",
]

log = logging.getLogger("pgflight.db")

Connection = psycopg.Connection[Any]
M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


@contextmanager
def translated() -> Iterator[None]:
    """Turn a psycopg error carrying one of pgflight's SQLSTATEs into its :mod:`pgflight.errors` class."""
    try:
        yield
    except psycopg.Error as e:
        diag = e.diag
        mapped = errors.from_sqlstate(
            e.sqlstate, diag.message_primary or str(e), detail=diag.message_detail, hint=diag.message_hint
        )
        if mapped is None:
            raise
        raise mapped from e


def _rows(conn: Connection, query: str, params: Sequence[Any], model: type[M]) -> list[M]:
    with translated(), conn.cursor(row_factory=dict_row) as cur:
        cur.execute(query, params)
        return [model.model_validate(r) for r in cur.fetchall()]


def _one(conn: Connection, query: str, params: Sequence[Any], model: type[M]) -> M:
    rows = _rows(conn, query, params, model)
    if len(rows) != 1:
        raise RuntimeError(f"expected one row, got {len(rows)}: {query}")
    return rows[0]


def _scalar(conn: Connection, query: str, params: Sequence[Any]) -> Any:
    with translated():
        row = conn.execute(query, params).fetchone()
    return None if row is None else row[0]


def _json(value: Any) -> Jsonb | None:
    return None if value is None else Jsonb(value)


def _bigint_array(values: Iterable[int]) -> str:
    """
    A bigint[] literal of `values`: the text psycopg's list dumper would send, built in one join
    (the dumper's per-element Python cost was a fifth of a worker's complete_batch call).
    """
    return "{" + ",".join([str(int(v)) for v in values]) + "}"


def _text_array(values: Iterable[str]) -> str:
    """A text[] literal (each element quoted) of `values`."""
    return "{" + ",".join([_quote_element(v) for v in values]) + "}"


def _jsonb_array(values: Iterable[Any]) -> str:
    """
    A jsonb[] literal of `values`: None is SQL NULL, a :class:`~psycopg.types.json.Jsonb` is sent
    as its dumps function writes it (so JSON text already made, e.g. by
    :func:`pgflight.db.payload.check_json`, is not made again), anything else as json.dumps writes
    it (as the Jsonb dumper would).
    """
    parts = []
    for v in values:
        if v is None:
            parts.append("NULL")
        elif isinstance(v, Jsonb):
            text = (v.dumps or json.dumps)(v.obj)
            parts.append(_quote_element(text.decode() if isinstance(text, bytes) else text))
        else:
            parts.append(_quote_element(json.dumps(v)))
    return "{" + ",".join(parts) + "}"


def _quote_element(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


_START = '{"start": true}'


def _opts(options: Mapping[str, Any] | None, **named: Any) -> Jsonb:
    merged = dict(options or {})
    merged.update({k: v for k, v in named.items() if v is not None})
    return Jsonb(merged)


def _fenced(conn: Connection, attempt_id: int, token: int, operation: str, call: Callable[[], T]) -> T:
    """Run a fenced write; on LeaseLost/Cancelled log the refusal with record_stale_write, then re-raise."""
    try:
        return call()
    except (errors.LeaseLost, errors.Cancelled):
        note_stale_write(conn, attempt_id, token, operation)
        raise


def note_stale_write(conn: Connection, attempt_id: int, token: int, operation: str) -> bool:
    """
    Best effort record_stale_write after a refused write; never raises.

    :return: True when an event was written.
    """
    if conn.closed or conn.info.transaction_status != TransactionStatus.IDLE:
        return False  # inside a caller's (aborted) transaction: nothing can be written here
    try:
        return record_stale_write(conn, attempt_id, token, operation)
    except (psycopg.Error, errors.PgflightError) as e:
        log.warning("could not record stale %s on attempt %s: %s", operation, attempt_id, e)
        return False


# --- operating ---------------------------------------------------------------------------------


def create_workspace(
    conn: Connection,
    name: str,
    *,
    daily_usd_cap: float | None = None,
    max_run_usd: float | None = None,
    options: Mapping[str, Any] | None = None,
) -> int:
    """
    Create a workspace (tenant), or update the caps of the one with this name.

    :param daily_usd_cap: USD per UTC day the workspace may spend (None: no cap).
    :param max_run_usd: default USD cap of each run tree.
    :return: the workspace id.
    :raises BadArgument: blank name or non-numeric cap.
    """
    return int(
        _scalar(
            conn,
            "select pgflight.create_workspace(%s, %s)",
            [name, _opts(options, daily_usd_cap=daily_usd_cap, max_run_usd=max_run_usd)],
        )
    )


def submit_run(
    conn: Connection,
    workspace: str,
    recipe: str,
    input: Any,
    *,
    idempotency_key: str | None = None,
    options: Mapping[str, Any] | None = None,
    **more: Any,
) -> models.SubmittedRun:
    """
    Submit a run: one queued root step of `recipe` with `input`.

    :param idempotency_key: same key in the workspace returns the same run.
    :param options: priority, max_attempts, backoff, not_before, lease_s, max_runtime_s (seconds),
        max_usd (USD), max_wall_s, max_iterations, max_tool_calls, submitted_by; also as keywords.
    :return: run, root step, first attempt, and whether this call created them.
    :raises IdempotencyConflict: the key names a run with another input (ZF004).
    :raises InputTooLarge: input over settings.max_input_bytes (ZF005).
    :raises NotFound: unknown workspace (ZF003).
    """
    return _one(
        conn,
        "select * from pgflight.submit_run(%s, %s, %s, %s)",
        [
            workspace,
            recipe,
            Jsonb(input),
            _opts(options, idempotency_key=idempotency_key, traceparent=_traceparent(options), **more),
        ],
        models.SubmittedRun,
    )


def submit_many(
    conn: Connection,
    workspace: str,
    runs: Iterable[Mapping[str, Any]],
    *,
    options: Mapping[str, Any] | None = None,
) -> list[models.SubmittedRunItem]:
    """
    Submit many runs in one statement (``submit_runs``): all of them, or none.

    :param runs: each a mapping with ``recipe``, ``input`` (default ``{}``), ``options`` (submit_run's,
        laid over the shared `options`) and, for convenience, ``idempotency_key`` (moved into its options).
    :param options: options every run shares (not idempotency_key); the current span's traceparent
        is added unless given.
    :return: one row per run, in order: its position (``idx``, from 1), run, root step, first attempt, and
        whether this call created it (False: its idempotency key named an existing run, or an earlier
        element of this call).
    :raises BadArgument: a malformed element (22023; the message starts ``submit_runs element N:``).
    :raises IdempotencyConflict: a key used before, or by an earlier element, with another input (ZF004).
    :raises CapExceeded: more runs than settings.max_runs_per_call, or an input over max_input_bytes (ZF005).
    :raises NotFound: unknown workspace (ZF003).
    """
    elements = [_run_element(r) for r in runs]
    with translated(), conn.cursor(row_factory=dict_row) as cur:
        cur.execute(
            "select * from pgflight.submit_runs(%s, %s, %s)",
            [workspace, Jsonb(elements), _opts(options, traceparent=_traceparent(options))],
        )
        # one validation of the whole list (per-row model_validate cost the client a
        # third more for a call of 10,000)
        return _SUBMITTED_RUN_ITEMS.validate_python(cur.fetchall())


_SUBMITTED_RUN_ITEMS: TypeAdapter[list[models.SubmittedRunItem]] = TypeAdapter(list[models.SubmittedRunItem])


def _run_element(run: Mapping[str, Any]) -> dict[str, Any]:
    """One element of submit_runs' array: an ``idempotency_key`` given beside the options goes into them."""
    if type(run) is dict and "idempotency_key" not in run:
        return run  # as it is (no copy per element)
    element = {k: v for k, v in run.items() if k != "idempotency_key"}
    key = run.get("idempotency_key")
    if key is not None:
        element["options"] = {**(run.get("options") or {}), "idempotency_key": key}
    return element


def _traceparent(options: Mapping[str, Any] | None) -> str | None:
    """The current span's traceparent for a new run, unless the caller's options name one."""
    return None if options and "traceparent" in options else tracing.traceparent()


def run_trace_context(conn: Connection, run_id: int) -> str | None:
    """The W3C traceparent the run was submitted under (its options), or None."""
    value = _scalar(conn, "select pgflight.run_trace_context(%s)", [run_id])
    return str(value) if value is not None else None


def cancel_run(
    conn: Connection, run_id: int, *, actor: str | None = None, reason: str | None = None
) -> models.RunCancelled:
    """
    Cancel a run: queued and parked attempts at once, leased ones on their next heartbeat.

    :raises NotFound: unknown run.
    """
    return _one(
        conn, "select * from pgflight.cancel_run(%s, %s, %s)", [run_id, actor, reason], models.RunCancelled
    )


def cancel_step(
    conn: Connection, step_id: int, *, actor: str | None = None, reason: str | None = None
) -> models.StepCancelled:
    """
    Cancel one step and its subtree.

    :raises NotFound: unknown step.
    """
    return _one(
        conn, "select * from pgflight.cancel_step(%s, %s, %s)", [step_id, actor, reason], models.StepCancelled
    )


def approve(
    conn: Connection,
    step_id: int,
    decision: str,
    actor: str,
    *,
    note: str | None = None,
    gate_key: str | None = None,
    payload: Any = None,
) -> models.ApprovalDecision:
    """
    Decide a step's approval gate ('approve' or 'reject'); the first decision wins.

    :param gate_key: None means the step's only pending gate.
    :param payload: JSON handed back with the decision; the step receives it. An agent's tool
        gate (``tool:<tool_use_id>``) takes ``{"arguments": {...}}`` (run the tool with these) or
        ``{"message": "..."}`` (answer the model instead of running it).
    :raises AlreadyDecided: the gate holds the other decision (ZF008).
    :raises BadArgument: decision not approve/reject, a payload a tool gate does not take.
    :raises NotFound: unknown step.
    :raises CapExceeded: a payload over settings.max_approval_request_bytes (ZF005).
    """
    return _one(
        conn,
        "select * from pgflight.approve(%s, %s, %s, %s, %s, %s)",
        [step_id, decision, actor, note, gate_key, _json(payload)],
        models.ApprovalDecision,
    )


def retry_step(conn: Connection, step_id: int, *, actor: str | None = None, note: str | None = None) -> int:
    """
    Give a dead-lettered step a fresh attempt.

    :return: the new attempt id.
    :raises NotFound: unknown step.
    :raises InvalidState: the step is not dead-lettered (ZF006).
    """
    return int(_scalar(conn, "select pgflight.retry_step(%s, %s, %s)", [step_id, actor, note]))


def replay_from(conn: Connection, step_id: int, *, actor: str | None = None, note: str | None = None) -> int:
    """
    Run a finished step again, then its ancestors.

    :return: the new attempt id.
    :raises InvalidState: the step is not terminal or an ancestor is running (ZF006).
    """
    return int(_scalar(conn, "select pgflight.replay_from(%s, %s, %s)", [step_id, actor, note]))


def run_status(conn: Connection, run_id: int) -> models.RunStatus:
    """
    One run's status with step counts by status and the root step's result or error.

    :raises NotFound: unknown run.
    """
    return _one(conn, "select * from pgflight.run_status(%s)", [run_id], models.RunStatus)


# --- working -----------------------------------------------------------------------------------


def register_worker(
    conn: Connection,
    name: str,
    *,
    hostname: str | None = None,
    pid: int | None = None,
    recipes: Sequence[str] | None = None,
    options: Mapping[str, Any] | None = None,
) -> int:
    """
    Register a worker process.

    :return: the worker id every claim and heartbeat carries.
    """
    return int(
        _scalar(
            conn,
            "select pgflight.register_worker(%s, %s)",
            [
                name,
                _opts(
                    options,
                    hostname=hostname,
                    pid=pid,
                    recipes=list(recipes) if recipes is not None else None,
                ),
            ],
        )
    )


def deregister_worker(conn: Connection, worker_id: int) -> None:
    """Mark a worker stopped (release its attempts first)."""
    with translated():
        conn.execute("select pgflight.deregister_worker(%s)", [worker_id])


# a claim's columns with the input as JSON text: each row's input is decoded on its own
# (models.ClaimedStep.from_claim), so an input Python cannot decode (nested deeper than its
# recursion limit) fails that step alone, never the whole fetch and with it the batch
_CLAIM_SELECT = ", ".join("input::text" if c == "input" else c for c in models.CLAIM_COLUMNS)
CLAIM_BATCH = f"select {_CLAIM_SELECT} from pgflight.claim_batch(%s, %s, %s, %s::text[], %s::jsonb)"


def claim_batch(
    conn: Connection,
    worker_id: int,
    *,
    batch_size: int,
    lease_s: float,
    recipes: Sequence[str] | None = None,
    start: bool = False,
) -> list[models.ClaimedStep]:
    """
    Lease up to `batch_size` ready steps to this worker.

    :param lease_s: lease length in seconds (a step's own lease_s wins); renewed by heartbeat.
    :param recipes: only these recipes (None: any).
    :param start: claim straight into running (no start_step call needed): one commit less per step.
    :return: at most `batch_size` steps, each with the fencing token every later write must carry;
        a step whose input cannot be decoded has ``input_error`` set (the others are unaffected).
    :raises UnknownWorker: unknown or stopped worker (ZF010).
    :raises BadArgument: non-positive batch size or lease.
    """
    with translated(), conn.cursor(row_factory=dict_row) as cur:
        cur.execute(
            CLAIM_BATCH,
            [
                worker_id,
                batch_size,
                lease_s,
                _text_array(recipes) if recipes is not None else None,
                _START if start else "{}",
            ],
        )
        return [models.ClaimedStep.from_claim(r) for r in cur.fetchall()]


def start_step(conn: Connection, attempt_id: int, token: int) -> models.StartedStep:
    """
    claimed -> running (idempotent for the holder).

    :raises LeaseLost: ZF001. :raises Cancelled: ZF002. :raises NotFound: ZF003.
    """
    return _fenced(
        conn,
        attempt_id,
        token,
        "start_step",
        lambda: _one(
            conn, "select * from pgflight.start_step(%s, %s)", [attempt_id, token], models.StartedStep
        ),
    )


def heartbeat(
    conn: Connection, worker_id: int, attempt_ids: Sequence[int], tokens: Sequence[int]
) -> list[models.HeartbeatStatus]:
    """
    Renew the leases of every attempt this worker holds, in one call.

    :return: per attempt 'held', 'cancelled' (stop; release_step) or 'lease_lost' (abandon, write nothing).
    :raises UnknownWorker: unknown or stopped worker (ZF010).
    """
    return _rows(
        conn,
        "select * from pgflight.heartbeat(%s, %s::bigint[], %s::bigint[])",
        [worker_id, _bigint_array(attempt_ids), _bigint_array(tokens)],
        models.HeartbeatStatus,
    )


def complete_step(conn: Connection, attempt_id: int, token: int, result: Any = None) -> models.AttemptStatus:
    """
    Complete a held attempt with a JSON result.

    :raises LeaseLost: ZF001 (after logging the refusal). :raises Cancelled: ZF002.
    """
    return _fenced(
        conn,
        attempt_id,
        token,
        "complete_step",
        lambda: _one(
            conn,
            "select * from pgflight.complete_step(%s, %s, %s)",
            [attempt_id, token, _json(result)],
            models.AttemptStatus,
        ),
    )


def complete_batch(
    conn: Connection, attempt_ids: Sequence[int], tokens: Sequence[int], results: Sequence[Any]
) -> list[models.BatchOutcome]:
    """
    Complete many held attempts in one transaction; never raises for a stale row (it logs it).

    :param results: JSON values (None: SQL NULL); a :class:`~psycopg.types.json.Jsonb` is sent as
        its own dumps function writes it (``Jsonb(text, dumps=str)``: JSON text made already).
    :return: per attempt 'succeeded', 'lease_lost' or 'cancelled'.
    """
    return _rows(
        conn,
        "select * from pgflight.complete_batch(%s::bigint[], %s::bigint[], %s::jsonb[])",
        [_bigint_array(attempt_ids), _bigint_array(tokens), _jsonb_array(results)],
        models.BatchOutcome,
    )


# the input as JSON text, decoded row by row (as CLAIM_BATCH)
COMPLETE_AND_CLAIM = (
    f"select {_CLAIM_SELECT}, outcome from pgflight.complete_and_claim("
    "%s, %s::bigint[], %s::bigint[], %s::jsonb[], %s, %s, %s::text[], %s::jsonb)"
)
# the claim's columns, in the order the function returns them (not read from cursor.description:
# psycopg built a Column object per column and call, a tenth of the call's Python)
_CLAIMED_COLUMNS = models.CLAIM_COLUMNS
_OUTCOME = len(_CLAIMED_COLUMNS)  # the outcome column: null on a claimed step's row


def complete_and_claim(
    conn: Connection,
    worker_id: int,
    attempt_ids: Sequence[int],
    tokens: Sequence[int],
    results: Sequence[Any],
    *,
    batch_size: int,
    lease_s: float,
    recipes: Sequence[str] | None = None,
) -> tuple[list[models.BatchOutcome], list[models.ClaimedStep]]:
    """
    claim_batch (started on claim) and complete_batch in one call of ``pgflight.complete_and_claim``:
    one round trip and one commit for a batch's completions and the claim of the slots they free.
    Atomic: when either part raises, nothing of the other is kept either.

    :param attempt_ids: the attempts to complete, ascending (complete_batch's lock order).
    :param results: as for :func:`complete_batch`.
    :param batch_size: most steps to claim; `lease_s` and `recipes` as for :func:`claim_batch`.
    :return: (complete_batch's outcomes, claim_batch's steps; an undecodable input as there).
    :raises UnknownWorker: unknown or stopped worker (ZF010): nothing completed either.
    :raises psycopg.Error: a result the server refuses (the whole batch is refused, as by
        complete_batch).
    """
    with translated(), conn.cursor() as cur:
        cur.execute(
            COMPLETE_AND_CLAIM,
            [
                worker_id,
                _bigint_array(attempt_ids),
                _bigint_array(tokens),
                _jsonb_array(results),
                batch_size,
                lease_s,
                _text_array(recipes) if recipes is not None else None,
                _START,
            ],
        )
        rows = cur.fetchall()
    done = [
        models.BatchOutcome(attempt_id=r[0], outcome=r[_OUTCOME]) for r in rows if r[_OUTCOME] is not None
    ]
    claims = [
        models.ClaimedStep.from_claim(dict(zip(_CLAIMED_COLUMNS, r[:_OUTCOME], strict=True)))
        for r in rows
        if r[_OUTCOME] is None
    ]
    return done, claims


def record_stale_write(conn: Connection, attempt_id: int, token: int, operation: str) -> bool:
    """
    Log a refused worker write as a stale_result_rejected event.

    :return: True when logged; False when the token is in fact current.
    """
    return bool(
        _scalar(conn, "select pgflight.record_stale_write(%s, %s, %s)", [attempt_id, token, operation])
    )


def fail_step(
    conn: Connection,
    attempt_id: int,
    token: int,
    error: Any,
    *,
    retryable: bool = True,
    retry_after_s: float | None = None,
) -> models.FailOutcome:
    """
    Fail a held attempt.

    :param error: JSON describing the error (kept on the attempt and the dead letter).
    :param retryable: False dead-letters at once.
    :param retry_after_s: seconds before the retry (replaces the backoff; still spends an attempt).
    :return: outcome retry, dead_letter or cancelled.
    :raises LeaseLost: ZF001. :raises Cancelled: ZF002.
    """
    return _fenced(
        conn,
        attempt_id,
        token,
        "fail_step",
        lambda: _one(
            conn,
            "select * from pgflight.fail_step(%s, %s, %s, %s)",
            [attempt_id, token, Jsonb(error), _opts(None, retryable=retryable, retry_after_s=retry_after_s)],
            models.FailOutcome,
        ),
    )


def release_step(
    conn: Connection,
    attempt_id: int,
    token: int,
    *,
    reason: str = "released",
    retry_after_s: float | None = None,
) -> models.AttemptStatus:
    """
    Give a held attempt back (no attempt spent), or acknowledge a cancel.

    :param retry_after_s: seconds (0 to 2592000) before the step may be claimed again, on the
        server's clock (a rate limit's Retry-After); None: at once.
    :return: outcome released (queued again, no attempt spent) or cancelled.
    :raises LeaseLost: ZF001. :raises BadArgument: 22023, retry_after_s out of range.
    """
    return _fenced(
        conn,
        attempt_id,
        token,
        "release_step",
        lambda: _one(
            conn,
            "select * from pgflight.release_step(%s, %s, %s, %s)",
            [attempt_id, token, reason, _opts(None, retry_after_s=retry_after_s)],
            models.AttemptStatus,
        ),
    )


def spawn_children(
    conn: Connection,
    attempt_id: int,
    token: int,
    children: Sequence[Mapping[str, Any]],
    *,
    fail_fast: bool = False,
) -> models.SpawnResult:
    """
    Fan-out: create child steps (idempotent by key) and park the parent until they are terminal.

    :param children: ``{"key", "recipe", "input", "options"}`` mappings.
    :return: children named, created, and whether the parent parked.
    :raises LeaseLost: ZF001. :raises Cancelled: ZF002. :raises InputTooLarge: ZF005.
    """
    return _fenced(
        conn,
        attempt_id,
        token,
        "spawn_children",
        lambda: _one(
            conn,
            "select * from pgflight.spawn_children(%s, %s, %s, %s)",
            [attempt_id, token, Jsonb(list(children)), _opts(None, fail_fast=fail_fast)],
            models.SpawnResult,
        ),
    )


def children_results(conn: Connection, step_id: int) -> list[models.ChildResult]:
    """The children of a step in key order, with status, result and error of their latest attempt."""
    return _rows(conn, "select * from pgflight.children_results(%s)", [step_id], models.ChildResult)


def request_approval(
    conn: Connection,
    attempt_id: int,
    token: int,
    gate_key: str,
    *,
    request: Any = None,
    expires_in_s: float | None = None,
    default: str | None = None,
) -> models.ApprovalRequest:
    """
    Ask for a decision at a gate; returns it if known, else parks the attempt (waiting = True).

    :param expires_in_s: seconds until the default decision applies.
    :param default: 'approve' or 'reject' (the server's default: reject).
    :raises LeaseLost: ZF001. :raises Cancelled: ZF002.
    """
    return _fenced(
        conn,
        attempt_id,
        token,
        "request_approval",
        lambda: _one(
            conn,
            "select * from pgflight.request_approval(%s, %s, %s, %s, %s)",
            [
                attempt_id,
                token,
                gate_key,
                _json(request),
                _opts(None, expires_in_s=expires_in_s, default_decision=default),
            ],
            models.ApprovalRequest,
        ),
    )


def record_effect(
    conn: Connection, attempt_id: int, token: int, key: str, result: Any
) -> models.RecordedEffect:
    """
    Record the receipt of an external effect the instant it succeeded.

    The receipt is stored even when the caller's lease lapsed meanwhile (the effect happened);
    ``lease_held`` then says False and the caller must stop.

    :return: the stored result (the first receipt for the key wins), recorded, lease_held.
    :raises LeaseLost: the token never belonged to this attempt (ZF001).
    """
    return _one(
        conn,
        "select * from pgflight.record_effect(%s, %s, %s, %s)",
        [attempt_id, token, key, _json(result)],
        models.RecordedEffect,
    )


def find_effect(conn: Connection, step_id: int, key: str) -> models.EffectReceipt | None:
    """:return: the receipt of effect `key` of step `step_id`, or None when it has not happened."""
    rows = _rows(conn, "select * from pgflight.find_effect(%s, %s)", [step_id, key], models.EffectReceipt)
    return rows[0] if rows else None


# --- sweeps ------------------------------------------------------------------------------------


def reclaim_expired(conn: Connection, *, limit: int = 1000) -> int:
    """Sweep: end up to `limit` expired leases and overrun deadlines. :return: how many."""
    return int(_scalar(conn, "select pgflight.reclaim_expired(%s)", [limit]))


def wake_parents(conn: Connection, *, limit: int = 1000) -> int:
    """Sweep: requeue parked parents whose children are all terminal. :return: how many."""
    return int(_scalar(conn, "select pgflight.wake_parents(%s)", [limit]))


def expire_approvals(conn: Connection, *, limit: int = 1000) -> int:
    """Sweep: apply the default decision to expired gates. :return: how many."""
    return int(_scalar(conn, "select pgflight.expire_approvals(%s)", [limit]))


def purge_finished(conn: Connection, *, older_than_s: float | None = None, limit: int = 1000) -> int:
    """Sweep: delete runs finished more than `older_than_s` seconds ago. :return: runs deleted."""
    return int(_scalar(conn, "select pgflight.purge_finished(%s, %s)", [older_than_s, limit]))


def run_sweeps(conn: Connection) -> list[models.SweepResult]:
    """Every sweep once. :return: rows affected per sweep."""
    return _rows(conn, "select * from pgflight.run_sweeps()", [], models.SweepResult)


def install_schedules(conn: Connection, *, interval_s: int = 5) -> list[models.Schedule]:
    """
    Register the sweeps with pg_cron (idempotent).

    :raises CronMissing: pg_cron is not installed (ZF011).
    """
    return _rows(conn, "select * from pgflight.install_schedules(%s)", [interval_s], models.Schedule)


# --- reads for operators (views) ---------------------------------------------------------------


def list_runs(conn: Connection, *, limit: int = 50, status: str | None = None) -> list[models.RunListItem]:
    """The most recent runs, newest first (view pgflight.run_list)."""
    return _rows(
        conn,
        "select * from pgflight.run_list where %s::text is null or status = %s order by run_id desc limit %s",
        [status, status, limit],
        models.RunListItem,
    )


def run_steps(conn: Connection, run_id: int) -> list[models.StepState]:
    """Every step of a run with its current attempt (view pgflight.step_status), in tree order by id."""
    return _rows(
        conn,
        "select * from pgflight.step_status where run_id = %s order by depth, step_id",
        [run_id],
        models.StepState,
    )


def run_events(conn: Connection, run_id: int, *, after_id: int = 0, limit: int = 1000) -> list[models.Event]:
    """The transition log of a run, oldest first (view pgflight.run_events)."""
    return _rows(
        conn,
        "select * from pgflight.run_events where run_id = %s and id > %s order by id limit %s",
        [run_id, after_id, limit],
        models.Event,
    )


def dead_letters(conn: Connection, *, limit: int = 100) -> list[models.DeadLetter]:
    """Dead-lettered steps with their last error, newest first (view pgflight.dead_letters)."""
    return _rows(
        conn,
        "select * from pgflight.dead_letters order by finished_at desc nulls last limit %s",
        [limit],
        models.DeadLetter,
    )


def server_now(conn: Connection) -> datetime:
    """
    The database's clock (``pgflight._now()``: the engine's clock, which every lease and
    deadline is computed from), for a worker that times those instants without its host's wall
    clock (:class:`pgflight.server_clock.ServerClock`).
    """
    value = _scalar(conn, "select pgflight._now()", [])
    assert isinstance(value, datetime)
    return value


def complete_step_text(
    conn: Connection, attempt_id: int, token: int, result: str | None
) -> models.AttemptStatus:
    """
    Complete a held attempt with its result as JSON text (``complete_step_text``): a result
    PostgreSQL refuses (``\\u0000``, NaN, malformed, over settings.max_result_bytes) fails the step
    alone instead of failing the call.

    :param result: the result as JSON text, or None (SQL NULL).
    :return: outcome succeeded or result_refused (the step dead-lettered; not retried).
    :raises LeaseLost: ZF001 (after logging the refusal). :raises Cancelled: ZF002.
    """
    return _fenced(
        conn,
        attempt_id,
        token,
        "complete_step",
        lambda: _one(
            conn,
            "select * from pgflight.complete_step_text(%s, %s, %s::text)",
            [attempt_id, token, result],
            models.AttemptStatus,
        ),
    )


def fail_step_text(
    conn: Connection,
    attempt_id: int,
    token: int,
    error: str | None,
    *,
    retryable: bool = True,
    retry_after_s: float | None = None,
) -> models.FailOutcome:
    """
    Fail a held attempt with its error as JSON text (``fail_step_text``): an error PostgreSQL
    refuses is stored as a message with its first characters instead of failing the call.

    :param error: the error as JSON text, or None.
    :return: outcome retry, dead_letter or cancelled.
    :raises LeaseLost: ZF001. :raises Cancelled: ZF002.
    """
    return _fenced(
        conn,
        attempt_id,
        token,
        "fail_step",
        lambda: _one(
            conn,
            "select * from pgflight.fail_step_text(%s, %s, %s::text, %s)",
            [attempt_id, token, error, _opts(None, retryable=retryable, retry_after_s=retry_after_s)],
            models.FailOutcome,
        ),
    )
