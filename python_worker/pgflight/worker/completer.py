"""
How an attempt's end is written: completions in batches, failures, releases.

Results wait in :attr:`Completer.pending` until the completer task sends all that accumulated in
one complete_batch; while a backlog lasts, with the claim of the slots they free in the same
statement (``complete_and_claim``, through the producer's callback). A batch the server refuses
is completed row by row, so one bad row cannot take its neighbours down. Every write carries the
attempt's fencing token; after the heartbeat reports a lost lease nothing is written.
"""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Callable
from functools import partial
from typing import Any

from pgflight import db, errors, models, tracing
from pgflight.db.connection import is_transient
from pgflight.db.payload import BadPayload, clean_text
from pgflight.db.wake import json_text
from pgflight.heartbeat import CANCELLED, FINISHING, LOST, Held, HeldSet
from pgflight.recipes import Fatal
from pgflight.worker.calls import Lane
from pgflight.worker.common import first_line, log, with_detail
from pgflight.worker.producer import Claimed

Pending = tuple[Held, Any, str, "asyncio.Future[str]"]
"""An attempt to complete: its holding, its result, the result's JSON text, its outcome to come."""

CompleteAndClaim = Callable[
    [db.Connection, list[int], list[int], list[object]], tuple[list[models.BatchOutcome], Claimed | None]
]


class Completer:
    """
    The writes that end attempts. `claim_with` completes a batch and claims the slots it frees
    in one statement (:meth:`Producer.complete_and_claim`), asked only while `wants_claim()`;
    `adopt` starts what it claimed; `unknown_worker` is told when that claim found the worker
    unregistered. While `short_of_batch(len(pending))`, pending completions wait up to
    `coalesce_s` for the other running steps' (the claim coalescing of completions).
    """

    def __init__(
        self,
        *,
        held: HeldSet,
        loop: asyncio.AbstractEventLoop,
        control: Lane,
        claim_with: CompleteAndClaim,
        wants_claim: Callable[[], bool],
        short_of_batch: Callable[[int], bool],
        coalesce_s: float,
        adopt: Callable[[Claimed, int], None],
        unknown_worker: Callable[[], None],
    ) -> None:
        self.held = held
        self._loop = loop
        self.control = control  # retried for a lease (lease_s)
        self.pending: list[Pending] = []
        self.flush = asyncio.Event()
        self._claim_with = claim_with
        self._wants_claim = wants_claim
        self._short_of_batch = short_of_batch
        self._coalesce_s = coalesce_s
        self._adopt = adopt
        self._unknown_worker = unknown_worker

    # --- completions -------------------------------------------------------------------------

    async def complete(self, held: Held, result: Any, text: str) -> None:
        """Complete in the next complete_batch; `text` is `result` as JSON (check_json's)."""
        if not self.held.transition(held, FINISHING):
            log.info(
                "attempt %s finished after it was %s: result discarded", held.claim.attempt_id, held.state
            )
            return
        fut: asyncio.Future[str] = self._loop.create_future()
        self.pending.append((held, result, text, fut))
        self.flush.set()
        try:
            outcome = await fut
        except Exception as e:
            log.error("completing attempt %s failed: %s", held.claim.attempt_id, first_line(e))
            return
        if outcome == "result_refused":
            log.warning(
                "the database refused the result of attempt %s: its step failed", held.claim.attempt_id
            )
        elif outcome == "lease_lost":
            # the wording every worker library uses for a lost lease (conformance/README.md)
            log.warning(
                "lease lost on attempt %s (step %s) at its completion: result not written, abandoned",
                held.claim.attempt_id,
                held.claim.step_id,
            )
        elif outcome != "succeeded":
            log.warning("completion of attempt %s refused (%s): abandoned", held.claim.attempt_id, outcome)

    async def loop(self) -> None:
        """
        Send pending completions, all that accumulated meanwhile in one complete_batch; while a
        backlog lasts, with the claim of the slots they free in the same statement (:meth:`finish`).
        """
        while True:
            await self.flush.wait()
            self.flush.clear()
            await self._fill()
            while self.pending:
                batch, self.pending = self.pending[:500], self.pending[500:]
                batch.sort(key=lambda p: p[0].claim.attempt_id)  # lock order shared with the heartbeat
                attempt_ids = [h.claim.attempt_id for h, _, _, _ in batch]
                tokens = [h.claim.fencing_token for h, _, _, _ in batch]
                # the JSON text check_json made, sent as it is (None stays SQL NULL)
                results: list[object] = [None if r is None else json_text(t) for _, r, t, _ in batch]
                try:
                    rows, claimed = await self.control.off_loop(
                        partial(self.finish, attempt_ids, tokens, results)
                    )
                except Exception as e:
                    if is_transient(e) or len(batch) == 1:
                        for _, _, _, f in batch:
                            if not f.done():
                                f.set_exception(e)
                        continue
                    log.warning(
                        "complete_batch of %d attempts refused (%s): completing them one by one",
                        len(batch),
                        first_line(e),
                    )
                    for h, r, t, f in batch:
                        await self._complete_alone(h, None if r is None else t, f)
                    continue
                outcome = {r.attempt_id: r.outcome for r in rows}
                for h, _, _, f in batch:
                    if not f.done():
                        f.set_result(outcome.get(h.claim.attempt_id, "lease_lost"))
                if claimed is not None:
                    # after the results: the finished steps' tasks end before the new ones start
                    self._adopt(claimed, len(batch))

    async def _fill(self) -> None:
        """
        While the pending completions would free less than a whole batch under a backlog (see
        Producer.short_of_batch), wait up to ``coalesce_s`` for more, so that one statement
        completes and claims a whole batch again.
        """
        if not self.pending or not self._short_of_batch(len(self.pending)):
            return
        deadline = self._loop.time() + self._coalesce_s
        while self._short_of_batch(len(self.pending)):
            left = deadline - self._loop.time()
            if left <= 0:
                return
            try:
                async with asyncio.timeout(left):
                    await self.flush.wait()
            except TimeoutError:
                return
            self.flush.clear()

    def finish(
        self, attempt_ids: list[int], tokens: list[int], results: list[object]
    ) -> tuple[list[models.BatchOutcome], Claimed | None]:
        """
        Complete a batch (db thread): while a backlog lasts, with the claim of the slots it frees
        in one statement (one round trip and one commit instead of two each); else, or when that
        statement fails, complete_batch alone, retried as before.

        :return: (the outcomes, (the claimed steps, how many were asked) or None: no claim).
        :raises Exception: complete_batch's refusal (a result the server refuses): the caller
            completes the batch one by one.
        """
        if self._wants_claim():
            try:
                return self.control.once(self._claim_with, attempt_ids, tokens, results)
            except errors.UnknownWorker:
                self._unknown_worker()  # nothing kept: the claim loop registers again; complete alone
            except Exception as e:
                if not is_transient(e):
                    raise  # the batch was refused, the claim with it: one by one
                # lost connection: the claim is not retried (its steps, if it committed, are
                # reclaimed when their leases lapse, as a claim loop's claim); the completions are
                # sent again below, retried as complete_batch always was
        return self.control(db.complete_batch, attempt_ids, tokens, results), None

    async def _complete_alone(self, held: Held, text: str | None, fut: asyncio.Future[str]) -> None:
        """
        Complete one attempt of a refused batch with complete_step_text (`text`: the result as
        JSON text, None for SQL NULL): a result the server refuses fails its step alone, in the
        same call (outcome failed), instead of an error that left the attempt claimed.
        """
        claim = held.claim
        try:
            row = await self.control.run(db.complete_step_text, claim.attempt_id, claim.fencing_token, text)
            outcome = row.status
        except (errors.LeaseLost, errors.Cancelled) as e:
            outcome = "lease_lost" if isinstance(e, errors.LeaseLost) else "cancelled"
        except Exception as e:
            if is_transient(e):
                fut.set_exception(e)
                return
            await self.write_failure(
                held,
                Fatal(f"the database refused the result of recipe {claim.recipe!r}: {with_detail(e)}"),
                retryable=False,
            )
            outcome = "result_refused"
        if not fut.done():
            fut.set_result(outcome)

    async def drain(self, timeout_s: float) -> None:
        """Send what is pending (shutdown), waiting at most `timeout_s` seconds."""
        if not self.pending:
            return
        self.flush.set()
        deadline = self._loop.time() + timeout_s
        while self.pending and self._loop.time() < deadline:
            await asyncio.sleep(0.01)

    # --- failures and releases ---------------------------------------------------------------

    async def fail(
        self, held: Held, exc: BaseException, *, retryable: bool = True, retry_after_s: float | None = None
    ) -> None:
        if not self.held.transition(held, FINISHING):
            log.info("attempt %s failed after it was %s: nothing written", held.claim.attempt_id, held.state)
            return
        tracing.record_error(exc)
        await self.write_failure(held, exc, retryable=retryable, retry_after_s=retry_after_s)

    async def write_failure(
        self, held: Held, exc: BaseException, *, retryable: bool = True, retry_after_s: float | None = None
    ) -> None:
        """fail_step with `exc` as the error (its text made storable: the error must not fail too)."""
        claim = held.claim
        error: dict[str, Any] = {
            "type": type(exc).__name__,
            "message": clean_text(str(exc), limit=4000),
            "traceback": clean_text("".join(traceback.format_exception(exc))[-8000:]),
        }
        if isinstance(exc, BadPayload):
            error["path"] = clean_text(exc.path)
        log.info(
            "attempt %s of step %s (%s) failed: %s: %s",
            claim.attempt_id,
            claim.step_id,
            claim.recipe,
            type(exc).__name__,
            first_line(exc),
        )
        try:
            await self.control.run(
                db.fail_step,
                claim.attempt_id,
                claim.fencing_token,
                error,
                retryable=retryable,
                retry_after_s=retry_after_s,
            )
        except errors.PgflightError as e:
            log.warning("fail_step of attempt %s refused: %s", claim.attempt_id, e)
        except Exception as e:
            log.error("fail_step of attempt %s failed: %s", claim.attempt_id, first_line(e))

    async def abandon(self, held: Held, exc: errors.PgflightError) -> None:
        """The lease is lost (write nothing) or the run cancelled (acknowledge with release_step)."""
        if isinstance(exc, errors.Cancelled) and self.held.transition(held, CANCELLED):
            await self.release(held, "cancel acknowledged")
        else:
            self.held.transition(held, LOST)
        log.warning("attempt %s abandoned: %s", held.claim.attempt_id, first_line(exc))

    async def release(
        self, held: Held, reason: str, *, lane: Lane | None = None, after_s: float | None = None
    ) -> bool:
        """
        release_step with the attempt's token (shutdown, acknowledging a cancel, or a recipe's
        Release, claimable again `after_s` seconds later), retried as `lane` (default: for a
        lease); True when done.
        """
        claim = held.claim
        try:
            await (lane or self.control).run(
                db.release_step, claim.attempt_id, claim.fencing_token, reason=reason, retry_after_s=after_s
            )
            return True
        except Exception as e:
            log.warning("could not release attempt %s (%s): %s", claim.attempt_id, reason, first_line(e))
            return False
