"""
The typed client of the agent SQL API: one function per SQL function (flight recorder, costs,
budgets). Every worker write carries ``(attempt_id, token)``; a refused write raises
:class:`~pgflight.errors.LeaseLost` / :class:`~pgflight.errors.Cancelled`, is logged with
record_stale_write and changed nothing. A cap that would be crossed raises
:class:`~pgflight.errors.BudgetExceeded` (ZF007) with the scope and figures in ``detail``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from psycopg.types.json import Jsonb

from pgflight import errors
from pgflight import models_agent as m
from pgflight.db.core import Connection, _fenced, _one, _opts, _rows, _scalar

__all__ = [
    "agent_run_of",
    "agent_runs_by_status",
    "agent_transcript",
    "begin_agent_run",
    "complete_tool_call",
    "complete_tool_calls",
    "enforce_budgets",
    "fork_agent",
    "load_transcript",
    "mark_tool_call",
    "price_usd",
    "record_model_call",
    "record_trace",
    "reserve_budget",
]


def begin_agent_run(
    conn: Connection,
    attempt_id: int,
    token: int,
    *,
    model: str,
    system: str = "",
    task: str = "",
    max_iterations: int | None = None,
    max_tool_calls: int | None = None,
    max_usd: float | None = None,
    max_wall_s: float | None = None,
) -> m.AgentRunBegun:
    """
    Start or resume the agent of the step this attempt runs (one agent run per step, across attempts).

    :param model: model name, priced by ``pgflight.model_prices``.
    :param task: the first user message (stored once, as iteration 0).
    :param max_iterations: model calls allowed (default: the run's, else 25).
    :param max_tool_calls: tool calls allowed (default: the run's, else 50).
    :param max_usd: USD cap of this agent and every descendant (None: only the run's and ancestors').
    :param max_wall_s: wall-time cap in seconds of this agent's tree, from its first start.
    :raises LeaseLost: ZF001. :raises Cancelled: ZF002. :raises BadArgument: 22023.
    """
    opts = _opts(
        None,
        model=model,
        system=system,
        task=task,
        max_iterations=max_iterations,
        max_tool_calls=max_tool_calls,
        max_usd=max_usd,
        max_wall_s=max_wall_s,
    )
    return _fenced(
        conn,
        attempt_id,
        token,
        "begin_agent_run",
        lambda: _one(
            conn,
            "select * from pgflight.begin_agent_run(%s, %s, %s)",
            [attempt_id, token, opts],
            m.AgentRunBegun,
        ),
    )


def reserve_budget(
    conn: Connection, attempt_id: int, token: int, agent_run_id: int, iteration: int, est_usd: float | Decimal
) -> m.Reservation:
    """
    Admission before model call `iteration`: check the caps and reserve `est_usd` (USD) atomically
    on every budget that binds the agent (run, capped ancestors, itself, the workspace's day).

    :raises BudgetExceeded: ZF007, a cap would be crossed; nothing was reserved.
    :raises TokenRateLimited: ZF013, the workspace's model tokens per minute are used (wait
        ``retry_after_s``); nothing was reserved.
    :raises LeaseLost: ZF001. :raises Cancelled: ZF002.
    """
    return _fenced(
        conn,
        attempt_id,
        token,
        "reserve_budget",
        lambda: _one(
            conn,
            "select * from pgflight.reserve_budget(%s, %s, %s, %s, %s)",
            [attempt_id, token, agent_run_id, iteration, Decimal(str(est_usd))],
            m.Reservation,
        ),
    )


def record_model_call(
    conn: Connection,
    attempt_id: int,
    token: int,
    agent_run_id: int,
    iteration: int,
    blocks: Sequence[Mapping[str, Any]],
    usage: Mapping[str, Any],
    model: str,
    *,
    stop_reason: str | None = None,
    retries: int = 0,
    mark_tools: bool = False,
    next_est_usd: float | Decimal | None = None,
) -> m.ModelCallRecorded:
    """
    Store a model response (one trace row per block), its usage and USD cost, settle the budgets
    and update the totals, in one transaction. A repeat for the same iteration stores nothing.

    :param blocks: the response's content blocks, as the Messages API returned them.
    :param usage: the response's usage (input_tokens, output_tokens, cache_*_input_tokens).
    :param retries: transient API errors retried before this answer.
    :param mark_tools: also mark the response's tool calls in flight (as many as max_tool_calls
        allows; ``marked`` lists them), so they may run without a mark_tool_call each.
    :param next_est_usd: also admit the next model call (iteration + 1), reserving this many USD,
        in the same transaction (``next_reserved`` says whether it was; when not, the
        ``complete_tool_calls(next_iteration=...)`` that follows admits it, or raises the refusal).
    :raises BudgetExceeded: ZF007 (iteration cap, or an unreserved call that does not fit).
    :raises LeaseLost: ZF001. :raises Cancelled: ZF002.
    """
    return _fenced(
        conn,
        attempt_id,
        token,
        "record_model_call",
        lambda: _one(
            conn,
            # the ninth argument only when given: an eight-argument call works on a database of
            # @v0.4.0 too
            "select * from pgflight.record_model_call(%s, %s, %s, %s, %s, %s, %s, %s"
            + (", %s)" if next_est_usd is not None else ")"),
            [
                attempt_id,
                token,
                agent_run_id,
                iteration,
                Jsonb(list(blocks)),
                Jsonb(dict(usage)),
                model,
                _opts(None, stop_reason=stop_reason, retries=retries, mark_tools=mark_tools or None),
                *([] if next_est_usd is None else [Decimal(str(next_est_usd))]),
            ],
            m.ModelCallRecorded,
        ),
    )


def record_orphan_cost(
    conn: Connection,
    attempt_id: int,
    token: int,
    agent_run_id: int,
    iteration: int,
    usage: Mapping[str, Any],
    model: str,
    *,
    stop_reason: str | None = None,
    retries: int = 0,
    why: str | None = None,
) -> m.OrphanCostRecorded:
    """
    Charge a paid model call that record_model_call refused because the attempt lost its lease (or
    its run was cancelled) meanwhile: written to costs marked lease_lost, charged to the budgets
    without a cap check (the money is spent), no transcript rows. Idempotent per (agent run,
    iteration, attempt). `token` is the one the call was made under, even if no longer current.

    :raises LeaseLost: ZF001 the token was never this attempt's. :raises NotFound: ZF003.
    :raises BadArgument: 22023 bad usage, options or a model without a price.
    """
    return _one(
        conn,
        "select * from pgflight.record_orphan_cost(%s, %s, %s, %s, %s, %s, %s)",
        [
            attempt_id,
            token,
            agent_run_id,
            iteration,
            Jsonb(dict(usage)),
            model,
            _opts(None, stop_reason=stop_reason, retries=retries or None, why=why),
        ],
        m.OrphanCostRecorded,
    )


def record_trace(
    conn: Connection,
    attempt_id: int,
    token: int,
    agent_run_id: int,
    iteration: int,
    role: str,
    block_type: str,
    content: Any,
    *,
    seq: int | None = None,
) -> m.TraceWritten:
    """
    Store one trace block that is not a model response (e.g. a transient API error, block_type
    ``api_error``, role ``system``); idempotent by seq (default: the next free seq of the system band,
    :data:`pgflight.transcript.SYSTEM` and on).

    :raises LeaseLost: ZF001. :raises Cancelled: ZF002. :raises BadArgument: 22023 malformed block.
    """
    return _fenced(
        conn,
        attempt_id,
        token,
        "record_trace",
        lambda: _one(
            conn,
            "select * from pgflight.record_trace(%s, %s, %s, %s, %s, %s, %s, %s)",
            [
                attempt_id,
                token,
                agent_run_id,
                iteration,
                role,
                block_type,
                Jsonb(content),
                _opts(None, seq=seq),
            ],
            m.TraceWritten,
        ),
    )


def mark_tool_call(
    conn: Connection, attempt_id: int, token: int, agent_run_id: int, tool_use_id: str
) -> m.ToolCallMark:
    """
    Mark a tool call in flight before it runs (counted against max_tool_calls the first time).

    :return: the previous status: new, in_flight, interrupted (now in flight again) or completed
        (then ``content`` is the stored tool_result and the tool must not run).
    :raises BudgetExceeded: ZF007 the tool-call cap. :raises NotFound: ZF003 unknown tool_use id.
    :raises LeaseLost: ZF001. :raises Cancelled: ZF002.
    """
    return _fenced(
        conn,
        attempt_id,
        token,
        "mark_tool_call",
        lambda: _one(
            conn,
            "select * from pgflight.mark_tool_call(%s, %s, %s, %s)",
            [attempt_id, token, agent_run_id, tool_use_id],
            m.ToolCallMark,
        ),
    )


def complete_tool_call(
    conn: Connection,
    attempt_id: int,
    token: int,
    agent_run_id: int,
    tool_use_id: str,
    result: Mapping[str, Any],
) -> m.ToolCallCompleted:
    """
    Store a tool call's tool_result block (the first result wins).

    :raises NotFound: ZF003. :raises LeaseLost: ZF001. :raises Cancelled: ZF002. :raises BadArgument: 22023.
    """
    return _fenced(
        conn,
        attempt_id,
        token,
        "complete_tool_call",
        lambda: _one(
            conn,
            "select * from pgflight.complete_tool_call(%s, %s, %s, %s, %s)",
            [attempt_id, token, agent_run_id, tool_use_id, Jsonb(dict(result))],
            m.ToolCallCompleted,
        ),
    )


def complete_tool_calls(
    conn: Connection,
    attempt_id: int,
    token: int,
    agent_run_id: int,
    results: Sequence[Mapping[str, Any]],
    *,
    next_iteration: int | None = None,
    est_usd: float | Decimal | None = None,
) -> m.ToolCallsCompleted:
    """
    Store an iteration's tool_result blocks (each names its call by ``tool_use_id``; the first
    result of a call wins) and, with `next_iteration`, admit that model call reserving `est_usd`
    (USD), in one transaction.

    :raises BudgetExceeded: ZF007, the next call was refused; the results are stored all the same
        and nothing was reserved.
    :raises TokenRateLimited: ZF013, the workspace's model tokens per minute are used (wait
        ``retry_after_s``); the results are stored all the same and nothing was reserved.
    :raises NotFound: ZF003 a result names no tool_use of the agent (nothing stored).
    :raises LeaseLost: ZF001. :raises Cancelled: ZF002. :raises BadArgument: 22023.
    """
    done: m.ToolCallsCompleted = _fenced(
        conn,
        attempt_id,
        token,
        "complete_tool_calls",
        lambda: _one(
            conn,
            "select * from pgflight.complete_tool_calls(%s, %s, %s, %s, %s, %s)",
            [
                attempt_id,
                token,
                agent_run_id,
                Jsonb([dict(r) for r in results]),
                next_iteration,
                None if est_usd is None else Decimal(str(est_usd)),
            ],
            m.ToolCallsCompleted,
        ),
    )
    if done.refusal is not None:
        cls = errors.BY_SQLSTATE.get(str(done.refusal.get("sqlstate") or "ZF007"), errors.BudgetExceeded)
        refusal = done.refusal
        raise cls(str(refusal.get("message")), detail=refusal.get("detail"), hint=refusal.get("hint"))
    return done


def load_transcript(
    conn: Connection, attempt_id: int, token: int, agent_run_id: int
) -> list[m.TranscriptBlock]:
    """
    The agent's transcript in order, after marking tool calls left in flight as interrupted.

    :raises LeaseLost: ZF001. :raises Cancelled: ZF002.
    """
    return _fenced(
        conn,
        attempt_id,
        token,
        "load_transcript",
        lambda: _rows(
            conn,
            "select * from pgflight.load_transcript(%s, %s, %s)",
            [attempt_id, token, agent_run_id],
            m.TranscriptBlock,
        ),
    )


def enforce_budgets(conn: Connection, *, limit: int = 1000) -> int:
    """Sweep: release reservations of lapsed attempts, cancel trees over their caps; returns the count."""
    return int(_scalar(conn, "select pgflight.enforce_budgets(%s)", [limit]))


def price_usd(conn: Connection, model: str, usage: Mapping[str, Any]) -> Decimal:
    """
    USD of a call of `model` with `usage`, from ``pgflight.model_prices``.

    :raises BadArgument: 22023 no price for the model.
    """
    return Decimal(_scalar(conn, "select pgflight.price_usd(%s, %s)", [model, Jsonb(dict(usage))]))


def agent_run_of(conn: Connection, step_id: int) -> m.AgentRunInfo | None:
    """The agent run of a step with totals and the step's status, or None when it is not an agent."""
    rows = _rows(conn, "select * from pgflight.agent_run_of(%s)", [step_id], m.AgentRunInfo)
    return rows[0] if rows else None


def agent_runs_by_status(
    conn: Connection, *, status: str = "succeeded", after: int = 0, limit: int = 1000
) -> list[m.AgentRunListed]:
    """Agent runs whose step has `status`, by agent run id after `after` (keyset paging)."""
    return _rows(
        conn,
        "select * from pgflight.agent_runs_by_status(%s, %s, %s)",
        [status, after, limit],
        m.AgentRunListed,
    )


def agent_transcript(conn: Connection, agent_run_id: int) -> list[m.TraceRow]:
    """An agent run's trace rows in order with per-call costs (a read: marks nothing)."""
    return _rows(conn, "select * from pgflight.agent_transcript(%s)", [agent_run_id], m.TraceRow)


def fork_agent(
    conn: Connection, step_id: int, at_iteration: int, patch: Mapping[str, Any] | None, *, reason: str
) -> m.AgentForked:
    """
    Fork the agent of `step_id` at iteration `at_iteration` (operator lane): a new run whose agent
    reuses the original's iterations before it (USD 0, marked reused) and asks the model from
    `at_iteration` on with `patch` applied; audited in the events log with `reason`.

    :param patch: system, model, provider, tools, max_tokens, max_iterations, max_tool_calls,
        max_usd (USD), max_wall_s (seconds), tool_results {tool_use id: str or content blocks}.
    :return: the fork's run, step, first attempt and agent run.
    :raises BadArgument: 22023 (an unknown patch key, an iteration out of range, no reason).
    :raises NotFound: ZF003. :raises InvalidState: ZF006. :raises CapExceeded: ZF005.
    """
    return _one(
        conn,
        "select * from pgflight.fork_agent(%s, %s, %s, %s)",
        [step_id, at_iteration, None if patch is None else Jsonb(dict(patch)), reason],
        m.AgentForked,
    )
