"""
Every claim the worker makes, in one place.

Three callers claim, one at a time under one mutex:

- the claim loop (event loop, :meth:`Producer.loop`): claim_batch on the claim pool whenever a
  slot is free and it was woken (a NOTIFY, a finished step, or the poll timer);
- the listener (its thread, :meth:`Producer.claim_ticket`): a wake ticket won and claimed in one
  statement on the LISTEN connection;
- the completer (a database thread, :meth:`Producer.complete_and_claim`): while a backlog lasts,
  the claim of the slots a batch of completions frees, in the completions' statement.

The slots a claim takes are *reserved* until the event loop starts the claimed steps (the mutex
is released before that), so a claim in between counts them as taken. The claimed steps go to the
executor through the `start` callback; the producer never runs a step itself.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Sized

from pgflight import db, errors, models
from pgflight.db.connection import is_transient
from pgflight.db.wake import claim_with_ticket, notify_ready
from pgflight.recipes import Registry
from pgflight.server_clock import ServerClock
from pgflight.worker.calls import Lane
from pgflight.worker.common import UNSERVED_SKIP_S, first_line, log
from pgflight.worker.threads import Wake
from pgflight.worker.tickets import WakeTickets

Claimed = tuple[list[models.ClaimedStep], int]
"""A claim's steps and how many it asked for."""


class Producer:
    """
    The worker's claims (see the module). `running` is the executor's running steps (their count
    takes slots), `start` starts claimed steps (event loop thread), `worker_id` reads the
    worker's current registration, `register_again` registers anew after ZF010 (unknown worker).
    """

    def __init__(
        self,
        *,
        registry: Registry,
        concurrency: int,
        batch_size: int,
        lease_s: float,
        claim_coalesce_s: float,
        clock: ServerClock,
        stopping: threading.Event,
        running: Sized,
        start: Callable[[list[models.ClaimedStep]], None],
        worker_id: Callable[[], int | None],
        register_again: Callable[[], Awaitable[None]],
        poll_interval: Callable[[], float],
    ) -> None:
        self.registry = registry
        self.concurrency = concurrency
        self.batch_size = batch_size
        self.lease_s = lease_s
        self.claim_coalesce_s = claim_coalesce_s
        self.clock = clock
        self.tickets = WakeTickets(registry.names())
        self._stopping = stopping
        self._running = running
        self._start = start
        self._worker_id = worker_id
        self._register_again = register_again
        self._poll_interval = poll_interval
        self.mutex = threading.Lock()  # one claim at a time: the loop's, the listener's or the completer's
        self.reserved = 0  # steps claimed that the loop has not started yet
        self._reserved_lock = threading.Lock()
        self.backlog = True  # the last claim filled its batch: a freed slot should claim at once
        self.relay = False  # woken by a ticket: pass one on if the first claim fills its batch
        self.ticket_lost_at = 0.0  # monotonic time another process of the group last won a ticket
        self.relays_sent = 0
        self.combined_claims = 0  # claims sent with a batch's completions
        # recipes claimed but not servable, left out of claims until this monotonic time
        self._unserved: dict[str, float] = {}
        # set by bind() on the event loop
        self._wake: Wake | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._claim_lane: Lane | None = None
        self._notify_lane: Lane | None = None
        self._background: set[asyncio.Task[None]] = set()

    def bind(self, loop: asyncio.AbstractEventLoop, wake: Wake, claim_lane: Lane, notify_lane: Lane) -> None:
        """The event loop's parts, once it runs: its wake-up flag, the claim pool, the control pool."""
        self._loop, self._wake = loop, wake
        self._claim_lane, self._notify_lane = claim_lane, notify_lane

    # --- slots -------------------------------------------------------------------------------

    def free(self) -> int:
        """Slots neither running a step nor reserved by a claim."""
        return self.concurrency - len(self._running) - self.reserved

    def whole_batch(self) -> int:
        """The most one claim can take: batch_size, or every slot when the batch is larger."""
        return min(self.batch_size, self.concurrency)

    def reserve(self, n: int) -> None:
        """Count n claimed steps not started yet as taking slots (negative: they started)."""
        with self._reserved_lock:
            self.reserved += n

    def start_reserved(self, claims: list[models.ClaimedStep]) -> None:
        """Start steps a claim reserved slots for (event loop thread), releasing the reservation."""
        self._start(claims)
        self.reserve(-len(claims))

    def claim_names(self) -> list[str]:
        """The recipes a claim asks for: the registry's, less those just found unservable."""
        names = self.registry.names()
        if not self._unserved:
            return names
        now = time.monotonic()
        for name, until in list(self._unserved.items()):
            if until <= now:
                self._unserved.pop(name, None)
        return [n for n in names if n not in self._unserved]

    def skip(self, recipe: str) -> None:
        """Leave `recipe` out of claims for :data:`UNSERVED_SKIP_S` (claimed but not servable here)."""
        self._unserved[recipe] = time.monotonic() + UNSERVED_SKIP_S

    def wants_claim(self) -> bool:
        """Whether a completion should claim the slots it frees (a backlog, not stopping)."""
        return self.backlog and not self._stopping.is_set()

    def short_of_batch(self, completing: int) -> bool:
        """
        Whether `completing` finished steps would free fewer slots than a whole batch while a
        backlog lasts and other steps still run (which may finish within ``claim_coalesce_s``):
        their completions then wait for those, as a freed slot waits in :meth:`_more_slots`. Left
        alone, a batch once split in two (a thread scheduled late) would stay split: each half's
        completions claim that half again, two statements per batch from then on.
        """
        return (
            self.claim_coalesce_s > 0
            and self.wants_claim()
            and completing + self.free() < self.whole_batch()
            and len(self._running) > completing
        )

    # --- the claim loop (event loop) ---------------------------------------------------------

    async def loop(self) -> None:
        """Claim whenever a slot is free and the loop was woken, until the worker stops."""
        assert self._wake is not None and self._claim_lane is not None
        wake, claim_lane, stopping = self._wake, self._claim_lane, self._stopping
        backoff = 0.1
        while not stopping.is_set():
            wake.clear()
            free = self.free()
            if 0 < free < self.whole_batch() and self.backlog and self._running and self.claim_coalesce_s > 0:
                free = await self._more_slots(free)
                if stopping.is_set():
                    break  # stopped while waiting for slots: claim nothing more
            if free > 0:
                want = min(free, self.batch_size)
                try:
                    claims, want = await claim_lane.run(self.claim, want)
                    backoff = 0.1
                except errors.UnknownWorker:
                    log.warning("worker id %s is unknown or stopped: registering again", self._worker_id())
                    await self._register_again()
                    continue
                except Exception as e:
                    if not is_transient(e):
                        raise
                    log.warning("claim failed (%s); retrying in %.1fs", first_line(e), backoff)
                    await wake.wait(backoff)
                    backoff = min(backoff * 2, 2.0)
                    continue
                if want <= 0:  # the listener claimed meanwhile: its steps start at once (adopt)
                    await self._idle()
                    continue
                log.debug("claimed %d of %d", len(claims), want)
                self.start_reserved(claims)
                if self.relay and len(claims) == want:
                    self.pass_wake_on()
                self.relay = False
                # a full batch: more may be ready, so a freed slot claims again at once; a short
                # one: the queue was empty, and what becomes ready later sends NOTIFY (or the poll)
                self.backlog = len(claims) == want
                if self.backlog and len(self._running) < self.concurrency:
                    continue  # more may be ready: claim again at once
            await self._idle()

    async def _more_slots(self, free: int) -> int:
        """
        While a backlog lasts, wait up to ``claim_coalesce_s`` for slots enough for a whole batch,
        so that one claim takes more rows (a claim's cost is mostly per call): the free slots then.
        """
        assert self._wake is not None
        deadline = time.monotonic() + self.claim_coalesce_s
        while free < self.whole_batch() and self._running and not self._stopping.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            await self._wake.wait(left)
            self._wake.clear()
            free = self.free()
        return free

    async def _idle(self) -> None:
        """
        Wait for a wake-up, or until the poll is due: poll_s after this wait began or after the
        last ticket another process of this recipe group won, whichever is later (that process
        claims what is ready, the winner's own claim included; polling beside it would only come
        back empty). A winner that died before claiming leaves its step to the next poll.
        """
        assert self._wake is not None
        began = time.monotonic()
        while True:
            left = max(began, self.ticket_lost_at) + self._poll_interval() - time.monotonic()
            if left <= 0:
                return
            if await self._wake.wait(left):
                return

    def pass_wake_on(self) -> None:
        """A ticket's claim came back full: more may be ready, so wake one more idle process (per group)."""
        assert self._notify_lane is not None
        self.relays_sent += 1
        ticket = f"relay.{self._worker_id()}.{self.relays_sent}"
        lane = self._notify_lane

        async def send() -> None:
            try:
                await lane.run(notify_ready, ticket)
            except Exception as e:  # the others' poll picks the rest up
                log.warning("could not pass the wake-up on: %s", first_line(e))

        task = asyncio.create_task(send(), name="pgflight-relay")
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # --- the claims --------------------------------------------------------------------------

    def claim(self, conn: db.Connection, want: int) -> Claimed:
        """claim_batch for the loop (a db thread), at most the slots still free: (claims, asked)."""
        worker_id = self._worker_id()
        assert worker_id is not None
        with self.mutex:
            want = min(want, self.free())
            if want <= 0 or self._stopping.is_set():
                return [], 0
            if self.clock.due():  # the database's clock, read again once a minute or so
                self.clock.sync(lambda: db.server_now(conn))
            claims = db.claim_batch(
                conn, worker_id, batch_size=want, lease_s=self.lease_s, recipes=self.claim_names(), start=True
            )
            # held as reserved until the loop starts them: the mutex is released before the event
            # loop runs start_reserved, and a listener claim in between must count these as taken
            self.reserve(len(claims))
            return claims, want

    def claim_ticket(self, conn: db.Connection, ticket: str, now: float) -> None:
        """
        Try `ticket` and claim when won, in one statement on the LISTEN connection `conn`
        (listener thread); the claimed steps are started on the event loop (:meth:`adopt`).
        """
        worker_id = self._worker_id()
        assert worker_id is not None
        with self.mutex:
            want = min(self.free(), self.batch_size)
            if want <= 0:
                return
            key = self.tickets.key(ticket)
            try:
                won, claims = claim_with_ticket(conn, key, worker_id, want, self.lease_s, self.claim_names())
            except BaseException:
                # a session lock outlives the failed statement: release it with the others later
                self.tickets.hold(key, now)
                raise
            self.reserve(len(claims))
        if won:
            self.tickets.hold(key, now)
            if not claims:
                log.debug("claimed 0 of %d (listener)", want)
        else:
            self.tickets.lost += 1
            self.ticket_lost_at = now  # someone else claims: the poll can wait
        if claims:
            loop = self._loop
            if loop is None or loop.is_closed():
                return  # stopping: the leases lapse and the steps are reclaimed
            loop.call_soon_threadsafe(self.adopt, claims, want)

    def adopt(self, claims: list[models.ClaimedStep], want: int) -> None:
        """Start what the listener claimed (event loop thread)."""
        self.start_reserved(claims)
        log.debug("claimed %d of %d (listener)", len(claims), want)
        self.backlog = len(claims) == want
        if self.backlog and self._wake is not None:
            self.pass_wake_on()  # more may be ready: wake the next idle process of the group
            self._wake.set()  # and claim again here if a slot is left

    def complete_and_claim(
        self, conn: db.Connection, attempt_ids: list[int], tokens: list[int], results: list[object]
    ) -> tuple[list[models.BatchOutcome], Claimed | None]:
        """
        Complete a batch and claim the slots it frees in one statement (a db thread), under the
        claim mutex (count the slots, claim, reserve them, as :meth:`claim`); complete_batch alone
        when another claim holds the mutex (a completion never waits behind a claim, C38) or the
        worker is stopping.
        """
        worker_id = self._worker_id()
        assert worker_id is not None
        if not self.mutex.acquire(blocking=False):
            return db.complete_batch(conn, attempt_ids, tokens, results), None
        try:
            # the batch's steps have returned: their slots are free once this statement commits
            want = min(self.free() + len(attempt_ids), self.batch_size)
            if want <= 0 or self._stopping.is_set():
                return db.complete_batch(conn, attempt_ids, tokens, results), None
            rows, claims = db.complete_and_claim(
                conn,
                worker_id,
                attempt_ids,
                tokens,
                results,
                batch_size=want,
                lease_s=self.lease_s,
                recipes=self.registry.names(),
            )
            self.reserve(len(claims))  # until the loop starts them (as a loop claim's)
            return rows, (claims, want)
        finally:
            self.mutex.release()

    def adopt_combined(self, claimed: Claimed, completions: int) -> None:
        """Start what a completion's statement claimed (event loop thread), after its results."""
        claims, want = claimed
        self.start_reserved(claims)
        self.combined_claims += 1
        log.debug("claimed %d of %d (with %d completions)", len(claims), want, completions)
        self.backlog = len(claims) == want

    async def settled(self, timeout_s: float) -> None:
        """
        Wait (at most `timeout_s`) until no claim is on the server and every claimed step has
        started. Once stopping, no claim begins (each checks under the claim mutex), but one sent
        before (the completer's combined statement, the listener's) may still commit steps leased
        to this worker: they must be run or released like the others, not left leased to a worker
        that deregisters (reclaimed only when their leases lapse, an attempt spent).
        """
        deadline = time.monotonic() + timeout_s
        while (self.mutex.locked() or self.reserved > 0) and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
