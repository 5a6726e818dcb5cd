"""
Pydantic models mirroring the columns the agent SQL functions return (see :mod:`pgflight.db.agent`).

USD amounts are :class:`~decimal.Decimal` (numeric in SQL); tokens are integers.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from pydantic import Field

from pgflight.models import Row


class AgentRunBegun(Row):
    """begin_agent_run: the agent of the step, whether this call created it, totals and caps."""

    agent_run_id: int
    created: bool
    iterations: int
    tool_calls: int
    usd: Decimal
    max_iterations: int
    max_tool_calls: int


class Reservation(Row):
    """reserve_budget: the USD held for model call `iteration` and the budgets it is held on."""

    agent_run_id: int
    iteration: int
    reserved_usd: Decimal
    budget_ids: list[int] | None


class ModelCallRecorded(Row):
    """
    record_model_call: the call's USD, whether this call stored it (False: a repeat), totals, and
    (with mark_tools) the tool_use ids it marked in flight, in block order; ``next_reserved``:
    whether it also admitted the next call (``next_est_usd``).
    """

    agent_run_id: int
    iteration: int
    usd: Decimal
    recorded: bool
    iterations: int
    tool_calls: int
    total_usd: Decimal
    marked: list[str] = Field(default_factory=list)
    next_reserved: bool = False


class OrphanCostRecorded(Row):
    """
    record_orphan_cost: a paid call whose lease was lost, charged to the budgets (costs.lease_lost);
    recorded False: a repeat for this (agent run, iteration, attempt), nothing charged again.
    """

    agent_run_id: int
    iteration: int
    usd: Decimal
    recorded: bool


class TraceWritten(Row):
    """record_trace: the row, its seq, and whether this call created it."""

    trace_id: int
    seq: int
    created: bool


class ToolCallMark(Row):
    """
    mark_tool_call: the status before (new, in_flight, interrupted, completed) and a stored result;
    the workspace's tool policy verdict (allow, deny, approval_required, approved, edited, rejected,
    answered) and the arguments the tool runs with (the approver's edit, else the model's).
    """

    trace_id: int | None
    previous_status: str
    content: Any
    policy: str = "allow"
    arguments: Any = None


class ToolCallCompleted(Row):
    """complete_tool_call: whether this call stored the result (False: it was already completed)."""

    trace_id: int
    completed: bool


class ToolCallsCompleted(Row):
    """
    complete_tool_calls: the tool_use ids stored by this call (a call already completed keeps its
    first result) and the admission of the next model call: reserved (USD held) or the refusal
    (``{message, detail, hint}`` of the ZF007), when one was asked for.
    """

    agent_run_id: int
    stored: list[str]
    reserved: bool
    reserved_usd: Decimal
    refusal: dict[str, Any] | None


class TranscriptBlock(Row):
    """load_transcript: one block, in (iteration, seq) order, with its call's stop_reason and USD."""

    iteration: int
    seq: int
    role: str
    block_type: str
    tool_use_id: str | None
    tool_name: str | None
    content: Any
    status: str
    attempt_id: int | None
    stop_reason: str | None
    usd: Decimal | None


class TraceRow(Row):
    """agent_transcript: one block with its call's model, tokens and USD (on every row of the iteration)."""

    iteration: int
    seq: int
    role: str
    block_type: str
    tool_use_id: str | None
    tool_name: str | None
    content: Any
    status: str
    tokens: int | None
    attempt_id: int | None
    created_at: datetime
    model: str | None
    input_tokens: int | None
    output_tokens: int | None
    cache_creation_tokens: int | None
    cache_read_tokens: int | None
    usd: Decimal | None
    stop_reason: str | None


class AgentRunInfo(Row):
    """agent_run_of: an agent with its totals, caps, and its step's status and result."""

    agent_run_id: int
    step_id: int
    run_id: int
    model: str
    system_prompt: str
    max_iterations: int
    max_tool_calls: int
    iterations: int
    tool_calls: int
    input_tokens: int
    output_tokens: int
    cache_creation_tokens: int
    cache_read_tokens: int
    usd: Decimal
    step_status: str
    result: Any
    created_at: datetime


class AgentRunListed(Row):
    """agent_runs_by_status: one agent run of a step with the given status."""

    agent_run_id: int
    step_id: int
    run_id: int
    model: str
    system_prompt: str
    iterations: int
    usd: Decimal
    result: Any


class AgentForked(Row):
    """fork_agent: the fork's run, root step, first attempt and agent run."""

    run_id: int
    step_id: int
    attempt_id: int
    agent_run_id: int
