"""
The agent recipe: an Anthropic-style tool-use loop whose every iteration is durable rows.

Each iteration is two transactions of engine overhead, and one short one per tool call:

1. after the model call (transient errors retried and recorded as ``api_error`` blocks),
   ``record_model_call`` stores the response blocks, usage and cost, settles the budgets and,
   when it asked for tools, admits the next model call (``next_est_usd``: the budget check and
   reservation, C24, in the same budget move as the settlement);
2. the tools run in order, each marked in flight by ``mark_tool_call`` just before it starts
   (one write per tool call; the mark counts against max_tool_calls) and run through effect
   receipts when it has side effects; ``mark_tool_call`` applies the workspace's tool policy
   (docs/waiting.md#tool-policies): a denied call gets the policy's error as its result, a call
   that needs an approval parks the step at gate ``tool:<tool_use_id>`` (the results so far are
   stored first) and, once decided, runs with the approver's edited arguments or is answered by
   the rejection or the approver's message; then ``complete_tool_calls`` stores all their results and
   keeps that admission (checking the wall-time caps again), or makes it when record_model_call
   could not (a tokens-per-minute limit, the iteration cap, a refusal: raised here), in one
   transaction.

The model is told only the truth: a tool call is in flight only once it is about to start, never
because the response that asked for it was recorded (``record_model_call`` is called without
``mark_tools``). After a crash, a call that was never marked has certainly not started and simply
runs; only a call that was marked (it may have started) goes through its verify hook, its effect
receipt, or the notice that it may or may not have taken effect.

The first model call of an attempt is admitted by ``reserve_budget``. Results produced before a
tool parks the attempt (``spawn``, ``request_approval``) or before the step fails are stored first.

Resume (a reclaimed or woken attempt): ``load_transcript`` marks calls left in flight as
interrupted and returns every block; the messages are rebuilt exactly (same content blocks, same
tool_use ids) and the loop continues at the first incomplete iteration, so iterations already
recorded are never asked of the model again, whatever they hold: an iteration recorded with no
block at all (an empty ``end_turn``) is known from ``begin_agent_run``'s ``iterations`` and ends
the agent with an empty answer; a replay of a finished agent asks the model nothing. The loop is
iterative: when ``record_model_call`` says another write already stored the iteration, it reloads
the record and goes on from there. An interrupted call is settled before anything is
retried: the tool's ``verify`` hook, else its effect receipt, decides; a tool without side effects
simply runs again; otherwise the model is told the call was interrupted.

Money: each call is admitted at the price of the request about to be sent, tool results
included (``complete_tool_calls`` re-prices the reservation ``record_model_call`` took ahead); a
call that does not fit is refused before it is made. The admission marks the call as out: an
attempt that ends before its answer is recorded (a kill, a frozen worker) is charged the
reservation as a cost of unknown outcome, settled if the answer is recorded late; a call the API
answered without charging (a refusal, rate limits) gives its reservation back (docs/budgets.md).
A response that was paid for is on the record even when the lease was lost (or the run
cancelled) while the model answered: ``record_model_call`` then refuses it, so the loop keeps its
usage as an effect receipt ``model_call:<attempt>:<iteration>`` (receipts are stored for any
holder whose token was the attempt's) before it stops. A hard cap on the requests one attempt
makes (``PGFLIGHT_AGENT_MAX_CALLS_PER_ATTEMPT``, default 200, 429s and errors included) ends any
loop the recorder cannot see: the step fails fatally (or is given back when the last answers were
rate limits).

The workspace's model tokens per minute (``set_workspace_limits``: ``model_tokens_per_min``) are
checked at each admission: a refusal (ZF013, with retry_after_s) is waited out the same way,
traced as an ``api_error`` block with ``source: model_tokens_per_min``, then the admission is
asked again; its waits count toward the same patience.

Rate limits (429, 529) never spend an attempt: each is waited out within the attempt (the
heartbeat keeps the lease) for the server's Retry-After, at most
``PGFLIGHT_AGENT_MAX_RETRY_AFTER_S`` seconds (default 60) a wait, and is traced as an
``api_error`` block with ``rate_limited: true`` and ``wait_s``; when the waits of the attempt
would pass ``PGFLIGHT_AGENT_RATE_LIMIT_PATIENCE_S`` (default 600 s) or the attempt's deadline, the
step is given back (release_step: queued again, no attempt spent), claimable again only once the
wait the last answer asked for has passed (its Retry-After, at most the cap above), so that the
next attempt does not ask before the server said it may.

Sub-agents: the ``delegate`` tool spawns one child ``agent`` step per sub-task (the plan is data);
the parent parks in awaiting_children and, when woken, gets the children's answers as the tool's
result. A child's spend counts against the parent's tree budgets.

A cap that would be crossed (ZF007) ends the step at once with :class:`BudgetExhausted` (a
:class:`~pgflight.recipes.Fatal`: dead letter, no retry), which wakes a waiting parent.

Streaming (``stream``: a channel name; docs/streams.md): the model is asked through the Messages
API's server-sent events, each text delta is written to that stream of the run as it arrives
(``ctx.stream``, batched; the deltas of one call within one batch joined in one chunk), and the
final message is recorded exactly as without streaming (the flight recorder stays the resume
source; an iteration already recorded is never streamed again). While the response streams, the
cost so far (the call's input at its price, the output tokens counted from the deltas at the output
price) is checked against the call's reservation before each delta is taken: a delta that would
cross it stops the stream there. The call is then recorded with what arrived (the text so far, the
output tokens counted so far, stop_reason ``budget_exhausted``), a ``budget_exhausted`` block is
traced, and the step ends as a budget stop (:class:`BudgetExhausted`). The tokens the server
generated after the last delta received are not counted (the documented overshoot of a stopped
stream).

The arguments of each tool call are streamed too, as they arrive (``input_json_delta``), to the
channel ``<stream>.tool_input`` (:func:`tool_input_channel`) as JSON objects
``{"iteration", "index", "id", "name", "partial_json"}``, the deltas of one call that arrive
within one batch joined in one object; the ``partial_json`` pieces of one ``id`` joined in
sequence order are the JSON text of the input the tool_use block records (an empty text is
``{}``).
"""

from __future__ import annotations

import functools
import json
import logging
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, NoReturn

from pydantic import BaseModel, Field, ValidationError

from pgflight import errors, tracing, transcript
from pgflight.agent import providers as prov
from pgflight.agent.tools import Tool, ToolContext, get_tools, result_text, tool
from pgflight.db import agent as adb
from pgflight.db.connection import is_transient
from pgflight.db.payload import BadPayload, check_json, clean_json
from pgflight.models_agent import TranscriptBlock
from pgflight.recipes import Fatal, Release, StepContext, recipe
from pgflight.settings import env_number

log = logging.getLogger("pgflight.agent")

DEFAULT_MAX_CALLS_PER_ATTEMPT = 200
DEFAULT_RATE_LIMIT_PATIENCE_S = 600.0
DEADLINE_MARGIN_S = 2.0  # a rate-limited step is given back this long before its deadline

Block = dict[str, Any]

INTERRUPTED_TEXT = (
    "The call was interrupted by a crash before its result was recorded; it may or may not "
    "have taken effect. Check before calling it again."
)


class AgentInput(BaseModel):
    """Input of the ``agent`` recipe."""

    task: str
    system: str = ""
    model: str = "offline"
    provider: str | None = None  # anthropic | offline | a registered name; default: see get_provider
    tools: list[str] = Field(default_factory=list)
    max_tokens: int = 1024
    max_iterations: int | None = None
    max_tool_calls: int | None = None
    max_usd: float | None = None  # USD cap of this agent and its sub-agents
    max_wall_s: float | None = None  # seconds, wall-time cap of this agent's tree
    est_usd: float | None = None  # USD reserved before each call (default: priced from the request)
    stream: str | None = None  # stream the model's text to this channel of the run (docs/streams.md)


def tool_input_channel(channel: str) -> str:
    """The stream an agent streaming its text to `channel` writes its tool calls' arguments to."""
    return f"{channel}.tool_input"


class BudgetExhausted(Fatal):
    """A budget cap (ZF007) stopped the agent; the step is dead-lettered with reason budget_exhausted."""


class AgentLoop:
    """One run of the agent recipe for one attempt."""

    def __init__(self, ctx: StepContext, inp: AgentInput, *, provider: prov.Provider | None = None) -> None:
        self.ctx = ctx
        self.inp = inp
        self.provider = provider or prov.get_provider(inp.provider, inp.model)
        try:
            self.tools: dict[str, Tool] = {t.name: t for t in get_tools(inp.tools)}
        except KeyError as e:
            raise Fatal(str(e)) from None
        self.agent_run_id = 0
        self.total_usd = Decimal(0)
        self.stop_reason: str | None = None
        self._unit_prices: tuple[Decimal, Decimal] | None = None
        self._pending: list[Block] = []  # tool results not yet stored (they go with the next admission)
        self._held: int | None = None  # the call record_model_call already admitted, and its USD
        self._held_est: Decimal | None = None
        self._tool_step = _ToolStep(self)
        self.requests = 0  # model requests this attempt made (answered or not)
        self.max_requests = int(
            env_number("PGFLIGHT_AGENT_MAX_CALLS_PER_ATTEMPT", DEFAULT_MAX_CALLS_PER_ATTEMPT, positive=True)
        )
        self.rate_limit_patience_s = env_number(
            "PGFLIGHT_AGENT_RATE_LIMIT_PATIENCE_S", DEFAULT_RATE_LIMIT_PATIENCE_S
        )
        self.rate_limited_s = 0.0  # seconds this attempt waited on 429 / 529
        self._last_rate_limited = False
        self._reserved: Decimal | None = None  # the USD the call being made was admitted at
        self._input_usd: Decimal | None = None  # the streaming call's input at its price
        self._writer = ctx.stream(inp.stream) if inp.stream else None
        self._tool_writer = ctx.stream(tool_input_channel(inp.stream)) if inp.stream else None
        self._iteration = 0  # the model call being asked (tool-input chunks name it)

    # --- db ------------------------------------------------------------------------------------

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """One client function on the worker's pool (StepContext.call)."""
        return self.ctx.call(fn, *args, **kwargs)

    def _db(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """A fenced agent write with this attempt's (attempt_id, token); ZF007 ends the step."""
        try:
            return self._call(fn, self.ctx.attempt_id, self.ctx.token, *args, **kwargs)
        except errors.BudgetExceeded as e:
            raise BudgetExhausted(
                f"budget_exhausted: {e.message}" + (f" [{e.detail}]" if e.detail else "")
            ) from None

    def _admit(self, iteration: int, est_usd: Decimal) -> None:
        """
        Admit model call `iteration` (reserve `est_usd` USD), in the transaction that stores the
        tool results still pending when there are any. A refusal for the workspace's model tokens
        per minute (ZF013) is waited out like a 429 (see :meth:`_wait_for_tokens`), then asked again.

        :raises BudgetExhausted: a cap refused the call (pending results are stored all the same).
        :raises Release: still refused for tokens at the attempt's rate-limit patience.
        """
        while True:
            try:
                if self._pending or self._held == iteration:
                    # the reservation record_model_call took ahead is re-priced to est_usd here
                    results, self._pending = self._pending, []
                    self._held = self._held_est = None
                    self._db(
                        adb.complete_tool_calls,
                        self.agent_run_id,
                        results,
                        next_iteration=iteration,
                        est_usd=est_usd,
                    )
                else:
                    self._db(adb.reserve_budget, self.agent_run_id, iteration, est_usd)
                self._reserved = est_usd
                return
            except errors.TokenRateLimited as e:  # the pending results were stored all the same
                self._wait_for_tokens(iteration, e)

    def _wait_for_tokens(self, iteration: int, refused: errors.TokenRateLimited) -> None:
        """
        Wait out a model-tokens-per-minute refusal for its retry_after_s (the heartbeat keeps the
        lease meanwhile; no attempt is spent), traced as an ``api_error`` block with
        ``rate_limited: true`` and ``source: model_tokens_per_min``. The waits count toward the
        attempt's rate-limit patience (``PGFLIGHT_AGENT_RATE_LIMIT_PATIENCE_S``) like 429s.

        :raises Release: the wait would pass the patience or the attempt's deadline: the step is
            given back (queued again, no attempt spent).
        """
        wait_s = refused.retry_after_s
        budget = self._rate_limit_budget()
        give_up = wait_s > budget
        block: Block = {
            "type": "api_error",
            "status": None,
            "source": "model_tokens_per_min",
            "message": refused.message[:2000],
            "detail": (refused.detail or "")[:2000],
            "rate_limited": True,
            "wait_s": None if give_up else wait_s,
        }
        self._db(adb.record_trace, self.agent_run_id, iteration, "system", "api_error", block)
        if give_up:
            raise Release(
                f"the workspace's model tokens per minute are used and the next wait of {wait_s:.3g} s "
                f"would pass the rate-limit budget of {budget:.3g} s; given back without spending an attempt",
                after_s=wait_s,
            )
        log.info(
            "agent run %s: model tokens per minute used, waiting %.3g s before call %s",
            self.agent_run_id,
            wait_s,
            iteration,
        )
        with tracing.span(
            "pgflight.agent.token_wait",
            **{"pgflight.agent_run_id": self.agent_run_id, "pgflight.iteration": iteration, "wait_s": wait_s},
        ):
            self._sleep(wait_s)
        self.rate_limited_s += wait_s

    def flush(self) -> None:
        """
        Store the tool results produced so far in this iteration (before the attempt may park, or
        fails), giving back the next call's reservation record_model_call made (the call is not
        about to be made: money held while the attempt waits would be kept from its sub-agents).
        """
        if self._pending or self._held is not None:
            results, self._pending = self._pending, []
            self._held = self._held_est = None
            self._db(adb.complete_tool_calls, self.agent_run_id, results)

    # --- the loop ------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        """Run (or resume) the agent to its final answer. :return: the step's result."""
        inp = self.inp
        schemas = [t.schema() for t in self.tools.values()]
        messages, iteration, results = self._begin()
        while True:
            if iteration > 0:
                uses = [b for b in messages[-1]["content"] if b.get("type") == "tool_use"]
                if uses:
                    messages.append({"role": "user", "content": self._tool_results(iteration, uses, results)})
                elif self.stop_reason != "pause_turn":
                    return self._final(messages, iteration)
                # pause_turn: the API paused a long turn (server tools); the paused assistant turn
                # is sent back as it is, and the model continues it (an iteration like any other)
            self.ctx.check_cancelled()
            iteration += 1
            request = prov.Request(inp.model, inp.system, messages, schemas, inp.max_tokens)
            # priced on the request about to be sent, tool results included (see _estimate)
            self._admit(iteration, self._estimate(request))
            started_ns = tracing.now_ns()
            try:
                response, retries = self._ask_or_give_back(iteration, request)
            except prov.StreamCut as cut:
                self._stopped_at_reservation(iteration, cut)
            content = _storable(response.get("content") or [])
            # a response asking for tools: its record admits the next call too (one budget move per
            # iteration); the estimate cannot see the tool results yet
            next_est = None
            if any(b.get("type") == "tool_use" for b in content):
                after = [*messages, {"role": "assistant", "content": content}]
                next_est = self._estimate(prov.Request(inp.model, inp.system, after, schemas, inp.max_tokens))
            rec = self._record(iteration, response, content, retries, next_est)
            self._held, self._held_est = (iteration + 1, next_est) if rec.next_reserved else (None, None)
            tracing.model_call(
                started_ns,
                inp.model,
                response,
                iteration=iteration,
                agent_run_id=self.agent_run_id,
                usd=rec.usd,
                retries=retries,
                max_tokens=inp.max_tokens,
            )
            if not rec.recorded:  # another write stored this iteration: go on from the record
                log.info(
                    "iteration %s of agent run %s was already recorded: reloading",
                    iteration,
                    self.agent_run_id,
                )
                messages, iteration, results = self._begin()
                continue
            self.total_usd = rec.total_usd
            self.stop_reason = response.get("stop_reason")
            messages.append({"role": "assistant", "content": content})
            results = {}

    def _begin(self) -> tuple[list[dict[str, Any]], int, dict[str, TranscriptBlock]]:
        """
        begin_agent_run and, on a resume, the transcript: the messages so far, the last recorded
        iteration and its tool results by tool_use id.
        """
        inp = self.inp
        begun = self._db(
            adb.begin_agent_run,
            model=inp.model,
            system=inp.system,
            task=inp.task,
            max_iterations=inp.max_iterations,
            max_tool_calls=inp.max_tool_calls,
            max_usd=inp.max_usd,
            max_wall_s=inp.max_wall_s,
        )
        self.agent_run_id = begun.agent_run_id
        self._pending = []
        self._held = self._held_est = None
        if begun.created:  # nothing to resume: the transcript is the task begin_agent_run stored
            self.total_usd, self.stop_reason = Decimal(0), None
            return [{"role": "user", "content": [{"type": "text", "text": inp.task}]}], 0, {}
        rows = self._db(adb.load_transcript, self.agent_run_id)
        messages, iteration, results = rebuild_messages(rows)
        self.total_usd = begun.usd
        self.stop_reason = next((r.stop_reason for r in reversed(rows) if r.iteration == iteration), None)
        if begun.iterations > iteration:
            # A model call recorded with no block (an empty end_turn): it has a costs row and no
            # trace row. It is the agent's last turn (nothing asked for a tool); never ask it again.
            if iteration > 0:
                uses = [b for b in messages[-1]["content"] if b.get("type") == "tool_use"]
                messages.append({"role": "user", "content": self._tool_results(iteration, uses, results)})
                self.flush()
            messages.append({"role": "assistant", "content": []})
            iteration, results = begun.iterations, {}
            self.stop_reason = None  # not in the transcript (no row carries it)
            log.info(
                "agent run %s: iteration %s was recorded with no content; ending with an empty answer",
                self.agent_run_id,
                iteration,
            )
        return messages, iteration, results

    def _ask(self, iteration: int, request: prov.Request) -> tuple[prov.Response, int]:
        """
        Model call `iteration`, transient errors retried and rate limits waited out.

        :raises Release: still rate-limited at the attempt's patience or near its deadline.
        """
        self._input_usd = None  # priced at this call's first delta
        self._iteration = iteration
        try:
            return prov.create_with_retries(
                self.provider,
                request,
                on_error=functools.partial(self._api_error, iteration),
                on_request=self._count_request,
                rate_limit_budget_s=self._rate_limit_budget(),
                sleep=self._sleep,
                on_delta=self._on_delta if self.inp.stream else None,
            )
        except prov.RateLimited as e:
            # the step may be claimed again only once the server's Retry-After has passed
            raise Release(
                f"rate-limited by the model API, given back without spending an attempt: {e}",
                after_s=e.retry_after_s,
            ) from None

    def _ask_or_give_back(self, iteration: int, request: prov.Request) -> tuple[prov.Response, int]:
        """
        :meth:`_ask`; when it ends with an answer that charged nothing (the API refused the request,
        rate limits or errors it answered, the request cap), the call's reservation is given back
        first. Otherwise (a connection lost or timed out with the request out, a crash) the
        reservation stays marked as out, and an attempt that ends so is charged it as an
        unknown outcome (the ledger never counts less than was spent).
        """
        try:
            return self._ask(iteration, request)
        except (errors.LeaseLost, errors.Cancelled):
            raise  # this attempt can write nothing more
        except (Release, Fatal, prov.TransientError) as e:
            answered = not isinstance(e, prov.TransientError) or e.status is not None
            if answered:
                try:
                    self._call(
                        adb.complete_tool_calls, self.ctx.attempt_id, self.ctx.token, self.agent_run_id, []
                    )
                except errors.PgflightError as g:
                    log.warning("model call %s: could not give back its reservation: %s", iteration, g)
            raise

    def _on_delta(self, delta: prov.Delta) -> None:
        """
        A delta of the streaming response: checked against the call's reservation (the input at
        its price, once per call, plus the output tokens so far at the output price), then its
        text written to the stream.

        :raises StopStream: taking it would cross the reservation.
        """
        if self._reserved is not None:
            usage = delta.usage
            if self._input_usd is None:
                # what the call costs before any output (input and cache tokens), priced once
                inputs = {k: v for k, v in usage.items() if k != "output_tokens"}
                self._input_usd = self._call(adb.price_usd, self.inp.model, inputs)
            per_out = self._prices()[1]
            spent = self._input_usd + per_out * int(usage.get("output_tokens") or 0) / 1_000_000
            if spent > self._reserved:
                raise prov.StopStream(f"{spent:.8f} USD would pass the reservation of {self._reserved} USD")
        # the deltas of one call queued in one batch go as one chunk: a chunk a batch, not a token
        if delta.kind == "text" and self._writer is not None:
            self._writer.write_joined(self._iteration, None, "", delta.text)
        elif delta.kind == "input_json" and self._tool_writer is not None:
            head = {
                "iteration": self._iteration,
                "index": delta.index,
                "id": delta.tool_id,
                "name": delta.tool_name,
            }
            key = (self._iteration, delta.index, delta.tool_id)
            self._tool_writer.write_joined(key, head, "partial_json", delta.text)

    def _stopped_at_reservation(self, iteration: int, cut: prov.StreamCut) -> NoReturn:
        """
        The streamed response reached the call's reservation: record what arrived (its cost is
        what was paid so far), trace a ``budget_exhausted`` block, end the step as a budget stop.

        :raises BudgetExhausted: always.
        """
        for writer in (self._writer, self._tool_writer):
            if writer is not None:
                writer.flush()
        response = {**cut.response, "stop_reason": "budget_exhausted"}
        content = _storable(response.get("content") or [])
        rec = self._record(iteration, response, content, cut.retries)
        out_tokens = int(response.get("usage", {}).get("output_tokens") or 0)
        why = (
            f"model call {iteration} reached its reservation of {self._reserved} USD while streaming, "
            f"after {out_tokens} output tokens ({rec.usd} USD paid); the response was stopped there"
        )
        block = {
            "type": "budget_exhausted",
            "reservation_usd": str(self._reserved),
            "usd": str(rec.usd),
            "output_tokens": out_tokens,
            "message": why,
        }
        self._db(adb.record_trace, self.agent_run_id, iteration, "system", "budget_exhausted", block)
        raise BudgetExhausted(f"budget_exhausted: {why}")

    def _prices(self) -> tuple[Decimal, Decimal]:
        """USD per million input and output tokens of the model (read once)."""
        if self._unit_prices is None:
            per_in = self._call(adb.price_usd, self.inp.model, {"input_tokens": 1_000_000})
            per_out = self._call(adb.price_usd, self.inp.model, {"output_tokens": 1_000_000})
            self._unit_prices = (per_in, per_out)
        return self._unit_prices

    def _count_request(self) -> None:
        """The hard cap on requests per attempt (a loop the recorder cannot see stops here)."""
        self.requests += 1
        if self.requests <= self.max_requests:
            return
        message = (
            f"model-call cap reached: this attempt made {self.max_requests} requests "
            "(PGFLIGHT_AGENT_MAX_CALLS_PER_ATTEMPT)"
        )
        if self._last_rate_limited:
            raise Release(message + " while rate-limited; given back without spending an attempt")
        raise Fatal(message + "; stopping rather than paying for a loop")

    def _rate_limit_budget(self) -> float:
        """Seconds of rate-limit waits still allowed: the patience left, and the deadline's margin."""
        budget = max(0.0, self.rate_limit_patience_s - self.rate_limited_s)
        deadline = getattr(self.ctx.claim, "deadline_at", None)
        if deadline is not None:
            left = (deadline - datetime.now(UTC)).total_seconds() - DEADLINE_MARGIN_S
            budget = min(budget, max(0.0, left))
        return budget

    def _sleep(self, seconds: float) -> None:
        """Wait out a retry; a cancel or a lost lease ends the wait (and the attempt) at once."""
        if seconds > 0 and self.ctx.cancelled.wait(seconds):
            self.ctx.check_cancelled()

    def _record(
        self,
        iteration: int,
        response: prov.Response,
        content: list[Block],
        retries: int,
        next_est: Decimal | None = None,
    ) -> Any:
        """
        record_model_call (admitting the next call with `next_est` USD when given); when the lease
        was lost (or the run cancelled) meanwhile, keep the paid call's usage as an effect receipt
        first, then stop.
        """
        try:
            return self._db(
                adb.record_model_call,
                self.agent_run_id,
                iteration,
                content,
                response.get("usage", {}),
                response.get("model") or self.inp.model,
                stop_reason=response.get("stop_reason"),
                retries=retries,
                mark_tools=False,  # each tool call is marked just before it starts (_tool_result)
                next_est_usd=next_est,
            )
        except (errors.LeaseLost, errors.Cancelled) as e:
            self._charge_orphan_call(iteration, response, retries, f"{type(e).__name__}: {_first_line(e)}")
            raise
        except BudgetExhausted:
            raise  # the call was not admitted and nothing was stored (the documented overshoot)
        except Exception as e:
            if is_transient(e):
                raise  # the database is out of reach (retried for a lease already): the attempt lapses
            # The recorder refuses this answer (a block type it does not know, a model it has no
            # price for, ...): a retry would pay for the same refusal again. Keep its usage, stop.
            self._keep_paid_call(
                iteration, response, retries, f"refused: {type(e).__name__}: {_first_line(e)}"
            )
            raise Fatal(
                f"the recorder refused the answer of model call {iteration} "
                f"({type(e).__name__}: {_first_line(e)}); stopping rather than paying for it again"
            ) from e

    def _charge_orphan_call(self, iteration: int, response: prov.Response, retries: int, why: str) -> None:
        """
        A paid response whose attempt lost its lease (or whose run was cancelled) meanwhile: charged
        to the budgets through record_orphan_cost (never raises). Only if that fails too is its usage
        kept as an effect receipt (:meth:`_keep_paid_call`).
        """
        model = response.get("model") or self.inp.model
        try:
            charged = self._call(
                adb.record_orphan_cost,
                self.ctx.attempt_id,
                self.ctx.token,
                self.agent_run_id,
                iteration,
                clean_json(response.get("usage", {})),
                model,
                stop_reason=response.get("stop_reason"),
                retries=retries,
                why=why[:1000],
            )
            log.warning(
                "model call %s was paid after the lease was lost (%s): %s USD charged to the budgets",
                iteration,
                why,
                charged.usd,
            )
        except Exception as e:
            log.warning("model call %s: record_orphan_cost failed (%s); keeping a receipt", iteration, e)
            self._keep_paid_call(iteration, response, retries, why)

    def _keep_paid_call(self, iteration: int, response: prov.Response, retries: int, why: str) -> None:
        """
        The usage of a paid response the recorder refused, as effect receipt
        ``model_call:<attempt>:<iteration>`` (never raises): money spent stays on the record.

        :param why: why record_model_call refused it (lease lost, cancelled, refused: ...).
        """
        from pgflight import db

        key = f"model_call:{self.ctx.attempt_id}:{iteration}"
        receipt = {
            "recorded": False,
            "agent_run_id": self.agent_run_id,
            "iteration": iteration,
            "model": response.get("model") or self.inp.model,
            "usage": clean_json(response.get("usage", {})),
            "stop_reason": response.get("stop_reason"),
            "retries": retries,
            "why": clean_json(why),
        }
        try:
            self._call(db.record_effect, self.ctx.attempt_id, self.ctx.token, key, receipt)
            log.warning(
                "model call %s was paid, not recorded (%s): usage kept as receipt %r", iteration, why, key
            )
        except Exception as e:
            log.error(
                "model call %s was paid, not recorded; its usage %s could not be kept: %s",
                iteration,
                receipt,
                e,
            )

    def _api_error(self, iteration: int, error: Block) -> None:
        """Record a transient API error (or rate limit, with its wait) met while making call `iteration`."""
        self._last_rate_limited = bool(error.get("rate_limited"))
        if self._last_rate_limited and error.get("wait_s"):
            self.rate_limited_s += float(error["wait_s"])
        self._db(adb.record_trace, self.agent_run_id, iteration, "system", "api_error", error)

    def _final(self, messages: list[dict[str, Any]], iteration: int) -> dict[str, Any]:
        # the last turn's text: a turn continued after pause_turn spans several assistant messages
        last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=-1)
        answer = "".join(
            b.get("text", "")
            for m in messages[last_user + 1 :]
            for b in m["content"]
            if b.get("type") == "text"
        )
        return {
            "answer": answer,
            "stop_reason": self.stop_reason,
            "iterations": iteration,
            "usd": float(self.total_usd),
            "agent_run_id": self.agent_run_id,
        }

    def _estimate(self, request: prov.Request) -> Decimal:
        """
        USD to reserve for `request`, the request about to be sent (its tool results included): the
        input's est_usd, else its size as tokens (the JSON of system prompt, messages and tools, in
        characters, / 4, + 1) at the model's input price plus max_tokens at its output price. A call
        that does not fit under a cap at this price is refused before it is made; one whose
        tokenizer counts more input tokens than this costs more than its reservation (the
        documented overshoot, docs/budgets.md).
        """
        if self.inp.est_usd is not None:
            return Decimal(str(self.inp.est_usd))
        chars = len(json.dumps([request.system, request.messages, request.tools], default=str))
        per_in, per_out = self._prices()
        return (per_in * (chars // 4 + 1) + per_out * request.max_tokens) / 1_000_000

    # --- tools ---------------------------------------------------------------------------------

    def _tool_results(
        self, iteration: int, uses: list[Block], rows: dict[str, TranscriptBlock]
    ) -> list[Block]:
        """Settle the last iteration's tool calls in order; their results stay pending (see _admit)."""
        try:
            return [self._tool_result(iteration, b, rows.get(b["id"])) for b in uses]
        except (errors.LeaseLost, errors.Cancelled):
            raise  # this attempt can write nothing more
        except Exception:  # the step ends (Fatal, BudgetExhausted, ...): keep what the tools did
            try:
                self.flush()
            except errors.PgflightError as e:
                self.ctx.log.warning("could not store the tool results before failing: %s", e)
            raise

    def _tool_result(self, iteration: int, use: Block, row: TranscriptBlock | None) -> Block:
        """Settle one tool call of the last iteration and return its tool_result block."""
        tid, name = use["id"], use["name"]
        if row is not None and row.status == "completed":
            return dict(row.content)
        t = self.tools.get(name)
        if t is None:
            return self._complete(tid, _error(tid, f"unknown tool {name!r}"))
        tctx = ToolContext(self._tool_step, self.agent_run_id, iteration, tid)
        if row is not None:  # interrupted (or left in flight by a parked run of this attempt)
            verdict = self._recover(t, use, tctx)
            if verdict is not None:
                return self._complete(tid, verdict)
        # in flight from here on: after a crash this call may have started (verify, receipt, notice)
        mark = self._db(adb.mark_tool_call, self.agent_run_id, tid)
        if mark.policy == "approval_required":
            # the workspace's tool policy holds the call for a decision at gate tool:<id> (its
            # request, the arguments, was written by mark_tool_call): store what this iteration
            # produced so far, then park; the decision comes back through mark_tool_call
            self.flush()
            self.ctx.request_approval(f"tool:{tid}")  # Parked, unless decided in between
            mark = self._db(adb.mark_tool_call, self.agent_run_id, tid)
            if mark.policy == "approval_required":
                raise Fatal(f"tool call {tid} is still held for approval after its gate was decided")
        if mark.previous_status == "completed":  # done before, or denied / rejected / answered
            return dict(mark.content)
        try:
            # the approver's edited arguments when there are some (mark_tool_call says which)
            args = t.args_model.model_validate(
                mark.arguments if mark.arguments is not None else use.get("input", {})
            )
        except ValidationError as e:
            return self._complete(tid, _error(tid, f"invalid arguments for {name}: {e}"))
        try:
            if t.side_effects:
                out = self.ctx.effect(f"tool:{tid}", lambda: _jsonable(t.call(args, tctx)))
            else:
                out = t.call(args, tctx)
        except (errors.LeaseLost, errors.Cancelled, Fatal):
            raise
        except Exception as e:  # a tool's failure is the model's information, not the step's
            return self._complete(tid, _error(tid, f"{type(e).__name__}: {e}"))
        return self._complete(tid, {"type": "tool_result", "tool_use_id": tid, "content": result_text(out)})

    def _recover(self, t: Tool, use: Block, tctx: ToolContext) -> Block | None:
        """An interrupted call: its result if it took effect (verify / receipt), a notice, or None."""
        tid = use["id"]
        if t.verify is not None:
            try:
                args = t.args_model.model_validate(use.get("input", {}))
            except ValidationError:
                return None
            verdict = t.verify(args, tctx)
            return (
                None
                if verdict is None
                else {"type": "tool_result", "tool_use_id": tid, "content": result_text(verdict)}
            )
        if t.side_effects:
            from pgflight import db

            receipt = self._call(db.find_effect, self.ctx.step_id, f"tool:{tid}")
            if receipt is not None:
                return {"type": "tool_result", "tool_use_id": tid, "content": result_text(receipt.result)}
            return _error(tid, INTERRUPTED_TEXT)
        return None

    def _complete(self, tid: str, result: Block) -> Block:
        """A call's result: pending until the next admission (or a flush) stores it."""
        result = _storable(result)
        self._pending.append({**result, "tool_use_id": tid})
        return result


class _ToolStep:
    """
    The step context a tool sees (``ToolContext.step``): the loop's StepContext, except that a call
    that may park the attempt (``spawn``, ``request_approval``) first stores the tool results the
    iteration has produced so far, since a parked attempt can write nothing more.
    """

    def __init__(self, loop: AgentLoop) -> None:
        self._loop = loop

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loop.ctx, name)

    def spawn(self, *args: Any, **kwargs: Any) -> Any:
        """:meth:`StepContext.spawn` after storing the pending tool results."""
        self._loop.flush()
        return self._loop.ctx.spawn(*args, **kwargs)

    def request_approval(self, *args: Any, **kwargs: Any) -> Any:
        """:meth:`StepContext.request_approval` after storing the pending tool results."""
        self._loop.flush()
        return self._loop.ctx.request_approval(*args, **kwargs)


def rebuild_messages(
    rows: list[TranscriptBlock],
) -> tuple[list[dict[str, Any]], int, dict[str, TranscriptBlock]]:
    """
    The Messages API conversation from a transcript, exactly as it was sent: the task, then per
    iteration the assistant's blocks and the user message of its tool results.

    :return: the messages up to the last assistant turn, the last iteration number (0: no model
        call yet), and the last iteration's tool_result rows by tool_use id (possibly incomplete).
    """
    by_it: dict[int, list[TranscriptBlock]] = {}
    for r in rows:
        by_it.setdefault(r.iteration, []).append(r)
    messages: list[dict[str, Any]] = [{"role": "user", "content": [r.content for r in by_it.get(0, [])]}]
    last = max(
        (i for i in by_it if i > 0 and any(transcript.is_response(r.seq) for r in by_it[i])), default=0
    )
    results: dict[str, TranscriptBlock] = {}
    for i in range(1, last + 1):
        blocks = by_it.get(i, [])
        assistant = [r.content for r in blocks if transcript.is_response(r.seq)]
        results = {r.tool_use_id: r for r in blocks if transcript.is_tool_result(r.seq) and r.tool_use_id}
        messages.append({"role": "assistant", "content": assistant})
        if i < last:
            uses = [b for b in assistant if b.get("type") == "tool_use"]
            messages.append({"role": "user", "content": [results[b["id"]].content for b in uses]})
    return messages, last, results


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:500] if text else type(e).__name__


def _storable(value: Any) -> Any:
    """`value` as the recorder can store it: NUL, lone surrogates and NaN replaced (rarely needed)."""
    try:
        check_json(value)
        return value
    except BadPayload:
        return clean_json(value)


def _error(tid: str, text: str) -> Block:
    return {"type": "tool_result", "tool_use_id": tid, "content": text, "is_error": True}


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


# --- sub-agents ----------------------------------------------------------------------------------


class SubTask(BaseModel):
    """One sub-agent's assignment."""

    task: str
    system: str | None = None
    tools: list[str] | None = None  # default: the parent's tools except delegate
    max_usd: float | None = None


class DelegateArgs(BaseModel):
    """Arguments of the delegate tool."""

    tasks: list[SubTask] = Field(min_length=1, max_length=100)


@tool(
    "delegate",
    description="Hand independent sub-tasks to sub-agents that work in parallel. "
    "Returns each sub-agent's answer (or its error), in order.",
)
def delegate(args: DelegateArgs, ctx: ToolContext) -> list[dict[str, Any]]:
    """Spawn one child agent step per sub-task; park until they end; return their answers."""
    parent: AgentInput = ctx.step.input
    prefix = f"{ctx.tool_use_id}-"
    children = []
    for i, sub in enumerate(args.tasks):
        child = parent.model_copy(
            update={
                "task": sub.task,
                "system": sub.system if sub.system is not None else parent.system,
                "tools": sub.tools if sub.tools is not None else [n for n in parent.tools if n != "delegate"],
                "max_usd": sub.max_usd,
                "max_wall_s": None,
            }
        )
        children.append(
            {"key": f"{prefix}{i:03d}", "recipe": "agent", "input": child.model_dump(mode="json")}
        )
    ctx.step.spawn(children)  # raises Parked until every child has ended
    out = []
    for c in ctx.step.children():
        if c.step_key.startswith(prefix):
            i = int(c.step_key[len(prefix) :])
            err = c.error.get("message") if isinstance(c.error, dict) else c.error
            out.append(
                {
                    "task": args.tasks[i].task,
                    "status": c.status,
                    "answer": c.result.get("answer") if isinstance(c.result, dict) else None,
                    "error": None if c.status == "succeeded" else err,
                }
            )
    return out


@recipe("agent", input=AgentInput)
def agent(ctx: StepContext) -> dict[str, Any]:
    """The agent step type: run or resume the tool-use loop to a final answer."""
    return AgentLoop(ctx, ctx.input).run()
