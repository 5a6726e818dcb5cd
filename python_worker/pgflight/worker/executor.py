"""
How a claimed step runs: one asyncio task per attempt, async recipes on the event loop and sync
ones on :class:`~pgflight.worker.threads.StepThreads`, within the attempt's deadline.

A step body runs only with a token a claim of this process returned (C10). One bad step harms
only itself: a result the database would refuse fails its own step at once, fatally, naming the
JSON path; the worker enforces an attempt's ``deadline_at`` itself (an async recipe is cancelled,
a sync one's thread *abandoned* and replaced, the attempt failed with ``DeadlineExceeded``); a
sync recipe whose lease was lost or whose run was cancelled gets one heartbeat interval to
return before it is abandoned the same way. The end of each attempt is written by the
:class:`~pgflight.worker.completer.Completer`.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from pgflight import db, errors, models, tracing
from pgflight.db.payload import BadPayload, check_json, clean_text
from pgflight.heartbeat import CANCELLED, FINISHING, LOST, RELEASED, Held, HeldSet
from pgflight.recipes import Fatal, Parked, Recipe, Registry, Release, Retry, StepContext
from pgflight.server_clock import ServerClock
from pgflight.worker.calls import Lane
from pgflight.worker.common import (
    FAR_DEADLINE_S,
    DeadlineExceeded,
    UndecodableInput,
    first_line,
    log,
    overran,
    step_name,
)
from pgflight.worker.completer import Completer
from pgflight.worker.threads import Expired, Inbox, StepThreads, Work, expire


class Executor:
    """
    Runs claimed steps. `skip` leaves a recipe this worker cannot serve out of its claims,
    `slot_freed` is told when a step ends, `restart` when too many recipe threads are abandoned
    (the reason), `worker_id` reads the registration (for the attempt's span).
    """

    def __init__(
        self,
        *,
        name: str,
        registry: Registry,
        held: HeldSet,
        tasks: dict[int, asyncio.Task[None]],
        threads: StepThreads,
        clock: ServerClock,
        control: Lane,
        completer: Completer,
        loop: asyncio.AbstractEventLoop,
        inbox: Inbox,
        heartbeat_s: float,
        max_result_bytes: int,
        max_abandoned_threads: int,
        worker_id: Callable[[], int | None],
        skip: Callable[[str], None],
        slot_freed: Callable[[], None],
        restart: Callable[[str], None],
    ) -> None:
        self.name = name
        self.registry = registry
        self.held = held
        self.threads = threads
        self.clock = clock
        self.control = control  # retried for a lease (lease_s): the step context's calls
        self.completer = completer
        self.loop = loop
        self.inbox = inbox
        self.heartbeat_s = heartbeat_s
        self.max_result_bytes = max_result_bytes
        self.max_abandoned_threads = max_abandoned_threads
        self.tasks = tasks  # running attempts, by attempt id
        self.steps_done = 0
        self._waiting: dict[int, Work] = {}  # sync recipes running, by attempt id
        self._worker_id = worker_id
        self._skip = skip
        self._slot_freed = slot_freed
        self._restart = restart
        # deadlines after this arm no timer (time_left); set at each start, none far before that
        self._far_after = datetime.max.replace(tzinfo=UTC)
        # check_json's name of each recipe's result, made once (not an f-string per step)
        self._result_names = {n: f"the result of recipe {n!r}" for n in registry.names()}

    def start_all(self, claims: list[models.ClaimedStep]) -> None:
        """Start claimed steps (event loop thread)."""
        # a deadline after this is far (FAR_DEADLINE_S from now, give or take a claim's start-up)
        self._far_after = self.clock.now() + timedelta(seconds=FAR_DEADLINE_S)
        for c in claims:
            held = self.held.add(c)
            # no task name: formatting one per step cost more than the rest of the start
            self.tasks[c.attempt_id] = asyncio.create_task(self._run(held))

    # --- one step ----------------------------------------------------------------------------

    async def _run(self, held: Held) -> None:
        claim = held.claim
        completer = self.completer
        span = None
        try:
            if tracing.enabled():
                stored = await self.control.within(30.0).run(db.run_trace_context, claim.run_id)
                span = tracing.start_attempt(claim, self.name, self._worker_id(), stored)
            # claimed with start=True: the attempt is already running, no start_step round trip
            recipe = self.registry.get(claim.recipe)
            if recipe is None:
                # claim_batch names only our recipes, so this is a registry that changed under the
                # worker: hand the step back (no attempt spent) for a worker that serves it, and
                # leave the recipe out of this worker's claims for a while (it would claim the
                # released step again at once, in a loop)
                self._skip(claim.recipe)
                log.error(
                    "attempt %s of step %s: recipe %r is not served by this worker: released",
                    claim.attempt_id,
                    claim.step_id,
                    claim.recipe,
                )
                if self.held.transition(held, RELEASED):
                    await completer.release(held, f"recipe {claim.recipe} not served")
                return
            try:
                if claim.input_error is not None:
                    raise UndecodableInput(claim.input_error)
                ctx = StepContext(
                    claim,
                    recipe.parse_input(claim.input),
                    call=self.control,
                    cancelled=held.cancelled,
                    on_park=lambda: self.held.transition(held, FINISHING),
                    on_unpark=lambda: self.held.transition(held, "running", only_from=(FINISHING,)),
                    lost=lambda: held.state == LOST,
                    max_receipt_bytes=self.max_result_bytes,
                )
                try:
                    result = await self._execute(held, recipe, ctx)
                finally:
                    if ctx.has_streams:  # the last batches go before the step ends (or parks)
                        await asyncio.to_thread(ctx.close_streams)
                text = check_json(
                    result,
                    what=self._result_names.get(claim.recipe) or f"the result of recipe {claim.recipe!r}",
                    max_bytes=self.max_result_bytes,
                )
            except Parked:
                log.debug("attempt %s parked", claim.attempt_id)
                return
            except Release as e:
                if self.held.transition(held, RELEASED):
                    log.info("attempt %s given back by its recipe: %s", claim.attempt_id, first_line(e))
                    await completer.release(held, clean_text(str(e), limit=1000), after_s=e.after_s)
            except BadPayload as e:
                await completer.fail(held, e, retryable=False)
            except Fatal as e:
                await completer.fail(held, e, retryable=False)
            except Retry as e:
                await completer.fail(held, e, retry_after_s=e.after_s)
            except (errors.LeaseLost, errors.Cancelled) as e:
                await completer.abandon(held, e)
            except asyncio.CancelledError:
                if held.state in (LOST, CANCELLED, RELEASED):
                    return  # interrupted on purpose (heartbeat or shutdown)
                raise
            except DeadlineExceeded as e:
                await completer.fail(held, e)
                self.held.transition(held, LOST, only_from=(FINISHING,))  # a late return writes nothing
            except Exception as e:
                await completer.fail(held, e)
            else:
                await completer.complete(held, result, text)
        finally:
            tracing.end_attempt(span, held.state)
            self.held.remove(claim.attempt_id)
            self.tasks.pop(claim.attempt_id, None)
            self.steps_done += 1
            self._slot_freed()

    async def _execute(self, held: Held, recipe: Recipe, ctx: StepContext) -> Any:
        """
        Run the recipe to its result, within the attempt's deadline.

        :raises DeadlineExceeded: the deadline passed (an async recipe was cancelled; a sync one's
            thread was abandoned).
        """
        claim = held.claim
        left = self.time_left(claim)
        if recipe.is_async:
            if left is None:
                return await recipe.fn(ctx)
            try:
                async with asyncio.timeout(left) as timer:
                    return await recipe.fn(ctx)
            except TimeoutError:
                if timer.expired() and held.state == "running":
                    raise overran(claim) from None
                raise
        run = contextvars.copy_context().run  # the thread sees the attempt's span
        fut: asyncio.Future[Any] = self.loop.create_future()
        work = self.threads.submit(run, (recipe.fn, ctx), fut, self.inbox)
        self._waiting[claim.attempt_id] = work
        timer_handle = None if left is None else self.loop.call_later(left, expire, fut)
        try:
            return await fut
        except Expired:
            pass  # the deadline (the recipe's own exceptions, TimeoutError too, go on as they are)
        except BaseException:
            self.threads.give_up(work)  # cancelled before a thread took it: it never runs
            raise
        finally:
            if timer_handle is not None:
                timer_handle.cancel()
            self._waiting.pop(claim.attempt_id, None)
        held.cancelled.set()
        self._abandon_thread(step_name(claim), work, "overran its deadline")
        raise overran(claim)

    def time_left(self, claim: models.ClaimedStep) -> float | None:
        """
        Seconds until the attempt's deadline_at, on the database's clock (deadline_at is an
        instant of that clock: a host whose wall clock is minutes off must not time it with its
        own); None when it has none or it is more than :data:`FAR_DEADLINE_S` away (no timer for
        it: see there).
        """
        deadline = claim.deadline_at
        if deadline is None or deadline > self._far_after:  # (one comparison: most steps end here)
            return None
        left = self.clock.seconds_until(deadline)
        return None if left > FAR_DEADLINE_S else max(0.0, left)

    # --- lost leases, cancels, overruns ------------------------------------------------------

    def on_abandon(self, held: Held) -> None:
        """
        The heartbeat thread found the lease lost or the run cancelled: an async recipe is
        interrupted; a sync one sees its cancelled event (threads cannot be killed) and gets one
        heartbeat interval to return before the worker stops waiting for it (its result would be
        discarded anyway).
        """
        task = self.tasks.get(held.claim.attempt_id)
        recipe = self.registry.get(held.claim.recipe)
        if task is None or recipe is None:
            return
        if recipe.is_async:
            self.loop.call_soon_threadsafe(task.cancel)
        else:
            self.loop.call_soon_threadsafe(
                self.loop.call_later, self.heartbeat_s, self._stop_waiting, held.claim
            )

    def _stop_waiting(self, claim: models.ClaimedStep) -> None:
        """A sync recipe still running a heartbeat interval after its lease was lost or its run cancelled."""
        work, task = self._waiting.get(claim.attempt_id), self.tasks.get(claim.attempt_id)
        if work is None or task is None or work.finished:
            return
        self._abandon_thread(
            step_name(claim), work, "did not stop after its lease was lost or its run cancelled"
        )
        task.cancel()  # _run sees the attempt lost / cancelled and writes nothing

    def _abandon_thread(self, what: str, work: Work, why: str) -> None:
        """Stop waiting for a sync recipe's thread (a new one takes its place); restart at the limit."""
        alive = self.threads.abandon(work)
        if alive is None:
            return  # it returned meanwhile, or was abandoned already
        log.error(
            "%s %s: its thread is abandoned (%d so far, %d still running; the worker restarts at %d)",
            what,
            why,
            self.threads.abandoned_total,
            alive,
            self.max_abandoned_threads,
        )
        if alive >= self.max_abandoned_threads:
            self._restart(f"{alive} recipe threads abandoned and still running")

    def cancel_async(self, held: Held) -> None:
        """Interrupt an async recipe's task (shutdown, after its release); a sync one cannot be."""
        task = self.tasks.get(held.claim.attempt_id)
        recipe = self.registry.get(held.claim.recipe)
        if task is not None and recipe is not None and recipe.is_async:
            task.cancel()
