"""
Pydantic models mirroring the columns the SQL API functions return, one model per result shape.

Times are timezone-aware datetimes; JSON columns arrive as Python values (dict, list, str, …).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict


class Row(BaseModel):
    """Base: immutable, ignores nothing silently (extra columns are an error in tests)."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class SubmittedRun(Row):
    """submit_run: the run, its root step and first attempt, and whether this call created them."""

    run_id: int
    step_id: int
    attempt_id: int
    created: bool


class SubmittedRunItem(Row):
    """submit_runs: one element's run (idx its 1-based position in the call), root step, first attempt."""

    idx: int
    run_id: int
    step_id: int
    attempt_id: int
    created: bool


class ClaimedStep(Row):
    """
    claim_batch: one leased attempt with the fencing token every later write must carry.

    `input` is the decoded JSON input; `input_error` says, in words, why it could not be decoded
    (then `input` is None and the worker fails this step alone, not the process or its batch).
    """

    attempt_id: int
    fencing_token: int
    step_id: int
    run_id: int
    parent_id: int | None
    step_key: str
    attempt_no: int
    recipe: str
    input: Any
    lease_expires_at: datetime
    deadline_at: datetime | None
    input_error: str | None = None

    @classmethod
    def from_claim(cls, row: Mapping[str, Any]) -> ClaimedStep:
        """
        One claimed row whose ``input`` is still JSON text (claims fetch it as text): decoded here,
        one row at a time, so a row that cannot be decoded spoils nothing but itself.

        :param row: the columns of :data:`CLAIM_COLUMNS`, ``input`` as JSON text or None.
        :return: the step; an input that cannot be decoded gives ``input=None`` and ``input_error``.
        """
        value, problem = decode_input(row["input"])
        return cls.model_validate({**row, "input": value, "input_error": problem})


# claim_batch's (and complete_and_claim's first) columns, in the order the functions return them
CLAIM_COLUMNS = tuple(name for name in ClaimedStep.model_fields if name != "input_error")


def decode_json(text: str) -> tuple[Any, RecursionError | ValueError | None]:
    """
    Decode JSON text from the database without raising for the text itself; the one decoder of
    the worker's step inputs (:func:`decode_input`) and the inspector's pages.

    :return: (the value, None), or (None, the error): a RecursionError for JSON nested deeper than
        Python's decoder recurses, a ValueError for text that is not JSON.
    """
    try:
        return json.loads(text), None
    except (RecursionError, ValueError) as e:
        return None, e


def decode_input(text: str | None) -> tuple[Any, str | None]:
    """
    Decode a claimed step's JSON input text.

    :return: (the value, None), or (None, why it cannot be decoded) for JSON nested deeper than
        Python's decoder can recurse or text that is not JSON; never raises for the text itself.
    """
    if text is None:
        return None, None
    value, error = decode_json(text)
    if isinstance(error, RecursionError):
        return None, (
            f"the input nests {json_depth(text)} levels deep, deeper than this worker can decode "
            f"({len(text)} characters of JSON); it is failed without retry"
        )
    if error is not None:
        return None, f"the input cannot be decoded as JSON ({error}); it is failed without retry"
    return value, None


def json_depth(text: str) -> int:
    """How deep arrays and objects nest in JSON `text` (a scan without recursion; strings skipped)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


class StartedStep(Row):
    """start_step: when the attempt started and its renewed lease."""

    attempt_id: int
    started_at: datetime
    lease_expires_at: datetime


class HeartbeatStatus(Row):
    """heartbeat: per attempt 'held' (renewed), 'cancelled' (stop, release_step) or 'lease_lost' (abandon)."""

    attempt_id: int
    status: str
    lease_expires_at: datetime | None


class AttemptStatus(Row):
    """
    complete_step (succeeded), complete_step_text (succeeded | result_refused) and release_step
    (released | cancelled): the attempt and its outcome.
    """

    attempt_id: int
    status: str


class BatchOutcome(Row):
    """complete_batch: per attempt 'succeeded', 'lease_lost', 'cancelled' or 'result_refused'."""

    attempt_id: int
    outcome: str


class FailOutcome(Row):
    """fail_step: 'retry' (with the next attempt and when it is claimable), 'dead_letter' or 'cancelled'."""

    attempt_id: int
    outcome: str
    next_attempt_id: int | None
    available_after: datetime | None


class RunCancelled(Row):
    """cancel_run: whether the run was running, and how many attempts were cancelled or asked to stop."""

    run_id: int
    was_running: bool
    cancelled: int
    cancel_requested: int


class StepCancelled(Row):
    """cancel_step: attempts cancelled at once and attempts asked to stop."""

    step_id: int
    cancelled: int
    cancel_requested: int


class SpawnResult(Row):
    """spawn_children: children named, children created by this call, whether the parent parked."""

    children_total: int
    created: int
    parked: bool


class ChildResult(Row):
    """children_results: one child (key order) with its latest attempt's status, result and error."""

    step_key: str
    step_id: int
    recipe: str
    status: str
    attempt_no: int
    result: Any
    error: Any


class ApprovalRequest(Row):
    """request_approval: the decision when known, else waiting = True (the attempt parked)."""

    decision: str | None
    actor: str | None
    note: str | None
    payload: Any = None  # what the decider handed back with the decision (approve's payload)
    waiting: bool


class TimerWait(Row):
    """wait_timer: outcome 'elapsed' once due, else waiting = True (the attempt parked)."""

    outcome: str | None
    due_at: datetime
    waiting: bool


class EventWait(Row):
    """wait_event: outcome 'received' (payload, event_id) or 'timed_out' (the default); else waiting."""

    outcome: str | None
    payload: Any
    event_id: str | None
    waiting: bool


class StreamWrite(Row):
    """stream_write: the numbers of the chunks written (first_seq None for none) and the stream's bytes."""

    first_seq: int | None
    last_seq: int
    total_bytes: int


class StreamChunk(Row):
    """stream_read: one chunk, with the attempt that wrote it (attempt_no counts from 1 per step)."""

    seq: int
    attempt_no: int
    attempt_id: int
    step_id: int
    chunk: str
    written_at: datetime


class StreamChannel(Row):
    """stream_channels: one stream of a run."""

    channel: str
    last_seq: int
    total_bytes: int
    updated_at: datetime


class EmittedEvent(Row):
    """emit_event: the event id, whether this call recorded it (False: the same id again), waits woken."""

    event_id: str
    emitted: bool
    woken: int


class ToolPolicy(Row):
    """set_tool_policy / tool_policies: what mark_tool_call does with a workspace's calls of a tool."""

    workspace: str
    tool_name: str
    action: str
    condition: str | None
    over_usd: Decimal | None
    updated_at: datetime
    updated_by: str


class ApprovalDecision(Row):
    """approve: the gate decided and whether this call applied the decision."""

    step_id: int
    gate_key: str
    decision: str
    applied: bool


class RunStatus(Row):
    """run_status: the run, step counts by status, attempts, and the root step's result or error."""

    run_id: int
    workspace: str
    recipe: str
    status: str
    created_at: datetime
    finished_at: datetime | None
    steps_total: int
    steps_queued: int
    steps_running: int
    steps_waiting: int
    steps_succeeded: int
    steps_dead_letter: int
    steps_cancelled: int
    attempts_total: int
    result: Any
    error: Any


class SweepResult(Row):
    """run_sweeps: rows affected per sweep."""

    sweep: str
    affected: int


class Schedule(Row):
    """install_schedules: one pg_cron job."""

    job_name: str
    schedule: str
    command: str


class EffectReceipt(Row):
    """find_effect: the receipt of an effect that already happened."""

    effect_id: int
    result: Any
    attempt_id: int
    recorded_at: datetime


class RecordedEffect(Row):
    """record_effect: the stored result (first receipt wins), whether this call stored it, lease held."""

    effect_id: int
    result: Any
    recorded: bool
    lease_held: bool


class RunListItem(Row):
    """view run_list: a run with its workspace name."""

    run_id: int
    workspace: str
    recipe: str
    status: str
    idempotency_key: str | None
    submitted_by: str | None
    created_at: datetime
    finished_at: datetime | None


class StepState(Row):
    """view step_status: a step with its latest attempt."""

    step_id: int
    run_id: int
    parent_id: int | None
    depth: int
    step_key: str
    recipe: str
    attempt_id: int
    attempt_no: int
    status: str
    failed_attempts: int
    max_attempts: int
    worker_id: int | None
    claimed_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    lease_expires_at: datetime | None
    deadline_at: datetime | None
    result: Any
    error: Any
    reason: str | None
    children_pending: int
    created_at: datetime


class Event(Row):
    """view run_events: one transition."""

    id: int
    at: datetime
    run_id: int | None
    step_id: int | None
    attempt_id: int | None
    from_status: str | None
    to_status: str | None
    worker_id: int | None
    actor: str | None
    reason: str
    detail: Any


class DeadLetter(Row):
    """view dead_letters: a dead-lettered step with its last error."""

    step_id: int
    run_id: int
    step_key: str
    recipe: str
    attempt_id: int
    attempt_no: int
    failed_attempts: int
    reason: str | None
    error: Any
    finished_at: datetime | None
