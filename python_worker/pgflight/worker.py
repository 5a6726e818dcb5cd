"""
The worker runtime: claim, run, heartbeat, complete — with nothing held while a step runs.

::

    Worker(dsn, load_modules(["myapp.recipes"]), concurrency=8).run()   # until SIGTERM / SIGINT

Moving parts (one process):

- the event loop: claims in batches (claim_batch, only the recipes it knows) whenever a slot is
  free and it was woken (a NOTIFY, a finished step, or the poll timer), runs each step as a task
  (async recipes on the loop, sync ones in a thread pool) and completes them in batches;
- a claim pool (1 connection) and a control pool (``pool_size`` connections) for start / complete
  / fail / release and the step context's calls, so a completion never waits behind a claim (C38);
  the loop's calls run on ``pool_size + 2`` db threads (:class:`DbThreads`), and what the db and
  step threads return reaches the loop through one :class:`Inbox`: one wake-up of the loop per
  burst of results, not one per step (issue 18: the thread hops were most of a no-op step's CPU);
- the heartbeat thread (:mod:`pgflight.heartbeat`) with its own connection;
- the listener thread: LISTEN ``pgflight_ready`` on a direct connection, self-probed at startup
  (C32: on failure one actionable error, then fast polling), re-established when it drops, LISTEN
  first and then a catch-up claim (C33), each reconnect logged. A notification's payload is a
  wake ticket (:class:`WakeTickets`): of the idle processes with the same recipes, the one that
  takes the ticket's advisory lock first claims, in the same statement on the LISTEN connection
  (:func:`claim_with_ticket`), and the others stay asleep and put their poll off (issue 18: one
  empty claim per process per job before); a winner whose claim fills its batch passes a fresh
  ticket on, so a burst still reaches every idle process.

Every DB call is one short autocommit transaction; a lost connection or a restarting server is
retried with backoff (C37). A step body runs only with a token a claim of this process returned
(C10). After the heartbeat reports a lost lease the worker writes nothing for that attempt; after
a cancel it acknowledges with release_step. SIGTERM / SIGINT: stop claiming, let running steps
finish for ``grace_s`` seconds, release the rest (no attempt spent, C39); SIGKILL loses nothing,
the lease lapses and the step is reclaimed elsewhere.

One bad step harms only itself (issue 14):

- a result the database would refuse (NaN, ±Infinity, a NUL character, a lone surrogate, over
  ``max_result_bytes``) fails its own step at once, fatally, naming the JSON path; the healthy
  steps completed in the same ``complete_batch`` succeed (and a batch the server still refuses is
  retried row by row, so one bad row cannot take its neighbours down);
- the worker enforces an attempt's ``deadline_at`` (the step's ``max_runtime_s``) itself: at the
  deadline an async recipe is cancelled, and the worker stops waiting for a sync one (the thread
  cannot be killed: it is *abandoned*, counted in :attr:`Worker.threads_abandoned`, and replaced,
  so the slot comes back); the attempt is failed with ``DeadlineExceeded`` (retryable, as the
  server's own deadline sweep would). A sync recipe whose lease was lost or whose run was cancelled
  gets one heartbeat interval to return before it is abandoned the same way;
- when ``max_abandoned_threads`` abandoned threads are still running, the worker stops claiming,
  releases what it holds and :meth:`Worker.run` raises :class:`WorkerRestart` (process exit code
  :data:`EXIT_RESTART`, 75): the supervisor (systemd, the compose file, ``pgflight review``) starts
  a fresh process, which gets the threads back.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import logging
import os
import queue
import signal
import socket
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from psycopg.types.json import Jsonb

from pgflight import db, errors, models, tracing
from pgflight.db.connection import Listener, call, is_transient, make_pool, prepare_threshold
from pgflight.db.core import translated
from pgflight.db.payload import DEFAULT_MAX_BYTES, BadPayload, check_json, clean_text
from pgflight.heartbeat import CANCELLED, FINISHING, LOST, RELEASED, Heartbeat, Held, HeldSet, clamp_interval
from pgflight.recipes import REGISTRY, Fatal, Parked, Registry, Release, Retry, StepContext, load_modules
from pgflight.server_clock import ServerClock
from pgflight.settings import env_number

log = logging.getLogger("pgflight.worker")
T = TypeVar("T")
_Claimed = tuple[list[models.ClaimedStep], int]  # a claim's steps and how many it asked for

FAR_DEADLINE_S = 7 * 86400.0
"""
A deadline_at further away than this (seconds) arms no timer in the worker. A step without
``max_runtime_s`` gets claim time + the engine's ``runtime_s`` limit (365 days), so every step
had one timer (a sync recipe) or an ``asyncio.timeout`` (an async one) that never fired (issue
18). The server's deadline sweep still fails an attempt that runs past it (retryable, as the
worker's own check would), and the next heartbeat reports it lost: the worker abandons it then.
"""

UNSERVED_SKIP_S = 30.0
"""
Seconds a worker leaves a recipe out of its claims after it claimed a step of it that it cannot
run (its registry names the recipe but has no function for it) and released the step: without
the pause it claimed the released step again at once, thousands of releases a second.
"""

EXIT_RESTART = 75
"""Exit status of a worker process that restarts itself (EX_TEMPFAIL): too many abandoned threads."""

PREPARED_MODES = ("auto", "on", "off")
"""The values of Worker(prepared_statements=...), --prepared-statements, PGFLIGHT_PREPARED_STATEMENTS."""


class WorkerRestart(SystemExit):
    """
    Raised by :meth:`Worker.run` after a clean stop when the worker needs a fresh process (too many
    recipe threads abandoned past their deadline). A SystemExit with code :data:`EXIT_RESTART`, so
    ``pgflight worker`` exits 75 and its supervisor starts it again.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(EXIT_RESTART)
        self.reason = reason


class DeadlineExceeded(Exception):
    """The attempt ran past its deadline_at (max_runtime_s): the worker stopped waiting for it."""


class Worker:
    """
    One worker process's runtime.

    :param dsn: where to connect (may be a transaction-mode PgBouncer).
    :param recipes: a registry, or module names to import (default: the process-wide registry).
    :param concurrency: steps run at once.
    :param batch_size: most steps per claim (default: concurrency).
    :param claim_coalesce_s: while a backlog lasts (the last claim came back full), seconds a
        freed slot waits for more slots to free before claiming, so that one claim_batch takes up
        to a whole batch (a claim's server time is mostly per call: in the peers' burn-down, 8 in
        flight, claims of about 4 rows became claims of about 8, and server CPU per job fell from
        1.15 to 0.63 ms). Never waits when the queue was found short, so a quiet queue's wake-up
        latency is unchanged. 0 claims at once; at most 1. Default 0.005.
    :param lease_s: lease in seconds; heartbeats renew it every lease/3 at most.
    :param heartbeat_s: heartbeat interval in seconds (clamped to lease/3, C04).
    :param grace_s: seconds running steps get to finish after SIGTERM before they are released.
    :param poll_s: claim poll interval in seconds while LISTEN works.
    :param fallback_poll_s: poll interval in seconds when LISTEN does not (pooler, standby).
    :param listen_dsn: DSN of the LISTEN connection (default: `dsn`); should be direct, not pooled.
    :param listen: False to poll only.
    :param pool_size: connections of the control pool.
    :param max_result_bytes: most bytes (UTF-8 JSON text) of a step's result or effect receipt; a
        larger one fails its step fatally (default ``PGFLIGHT_MAX_RESULT_BYTES``, else 16 MiB, the
        engine's default ``settings.max_input_bytes``).
    :param max_abandoned_threads: abandoned recipe threads (past their deadline, still running)
        the process tolerates; at this many it restarts (:class:`WorkerRestart`, exit 75). Default
        ``PGFLIGHT_MAX_ABANDONED_THREADS``, else 16.
    :param prepared_statements: server-side prepared statements (the parse and plan of each hot
        call made once per connection, C31): ``"auto"`` (default) on the claim and control
        connections once the LISTEN self-probe shows that `dsn` itself is a direct connection (no
        `listen_dsn` of its own, LISTEN works), never behind a transaction pooler; the LISTEN
        connection's once the probe passes (it is direct then). ``"on"``: always (a direct
        connection, or PgBouncer >= 1.21 with ``max_prepared_statements`` > 0; a pooler the probe
        detects is logged as an error). ``"off"``: never. Default ``PGFLIGHT_PREPARED_STATEMENTS``,
        else auto.
    """

    def __init__(
        self,
        dsn: str,
        recipes: Registry | Iterable[str] | None = None,
        *,
        concurrency: int = 4,
        batch_size: int | None = None,
        claim_coalesce_s: float = 0.005,
        lease_s: float = 30.0,
        heartbeat_s: float | None = None,
        grace_s: float = 10.0,
        poll_s: float = 2.0,
        fallback_poll_s: float = 0.25,
        listen_dsn: str | None = None,
        listen: bool = True,
        pool_size: int = 2,
        name: str | None = None,
        max_result_bytes: int | None = None,
        max_abandoned_threads: int | None = None,
        prepared_statements: str | None = None,
    ) -> None:
        prepared_statements = prepared_statements or os.environ.get("PGFLIGHT_PREPARED_STATEMENTS") or "auto"
        if prepared_statements not in PREPARED_MODES:
            raise ValueError(f"prepared_statements must be one of {', '.join(PREPARED_MODES)}")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if lease_s <= 0:
            raise ValueError("lease_s must be positive")
        self.dsn = dsn
        self.registry = (
            recipes
            if isinstance(recipes, Registry)
            else (load_modules(recipes) if recipes is not None else REGISTRY)
        )
        if not len(self.registry):
            raise ValueError("no recipes registered: pass recipe modules")
        self.concurrency = concurrency
        self.batch_size = max(1, batch_size or concurrency)
        if not 0 <= claim_coalesce_s <= 1:
            raise ValueError("claim_coalesce_s must be between 0 and 1 second")
        self.claim_coalesce_s = claim_coalesce_s
        self.lease_s = lease_s
        self.heartbeat_s = clamp_interval(lease_s, heartbeat_s)
        self.grace_s = grace_s
        self.poll_s = poll_s
        self.fallback_poll_s = fallback_poll_s
        self.listen_dsn = listen_dsn or dsn
        self.listen = listen
        self.pool_size = max(1, pool_size)
        self.name = name or f"{socket.gethostname()}:{os.getpid()}"
        self.worker_id: int | None = None
        self.held = HeldSet()
        self.listening = False
        self.listener_reconnects = 0
        self.steps_done = 0
        self.max_result_bytes = int(
            max_result_bytes or env_number("PGFLIGHT_MAX_RESULT_BYTES", DEFAULT_MAX_BYTES, positive=True)
        )
        self.max_abandoned_threads = int(
            max_abandoned_threads or env_number("PGFLIGHT_MAX_ABANDONED_THREADS", 16, positive=True)
        )
        self.restart_reason: str | None = None
        self.prepared_statements = prepared_statements
        # the pools' connections prepare their statements (read as each opens; set by _probed)
        self.prepared = prepared_statements == "on"
        self._stopping = threading.Event()
        self._threads = StepThreads(concurrency, "pgflight-step")
        self._waiting: dict[int, _Work] = {}  # sync recipes running, by attempt id
        self._db_threads = DbThreads(self.pool_size + 2, "pgflight-db")
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._background: set[asyncio.Task[None]] = set()
        self._pending: list[tuple[Held, Any, str, asyncio.Future[str]]] = []  # result, its JSON text
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None  # threading.get_ident() of the event loop's thread
        self._inbox: Inbox | None = None
        self._wake: Wake | None = None
        self._flush: asyncio.Event | None = None
        self._heartbeat: Heartbeat | None = None
        self._backlog = True  # the last claim filled its batch: a freed slot should claim at once
        self._tickets = WakeTickets(self.registry.names())
        self._relay = False  # woken by a ticket: pass one on if the first claim fills its batch
        self._ticket_lost_at = 0.0  # monotonic time another process of the group last won a ticket
        self._claim_mutex = threading.Lock()  # one claim at a time: the loop's or the listener's
        self._reserved = 0  # steps the listener claimed that the loop has not started yet
        self._reserved_lock = threading.Lock()
        self._claim_on_listener = True  # False once the LISTEN login cannot claim
        self._listener_refusals = 0
        self._catch_ups = 0
        self.relays_sent = 0
        self.combined_claims = 0  # claims sent with a batch's completions (_finish)
        # deadlines after this arm no timer (_time_left); set at each start, none far before that
        self._far_after = datetime.max.replace(tzinfo=UTC)
        # the database's clock, which deadline_at is on: never the host's wall clock (_time_left)
        self.clock = ServerClock()
        # recipes claimed but not servable, left out of claims until this monotonic time (_claim_names)
        self._unserved: dict[str, float] = {}
        # check_json's name of each recipe's result, made once (not an f-string per step)
        self._result_names = {n: f"the result of recipe {n!r}" for n in self.registry.names()}

    # --- public ------------------------------------------------------------------------------

    def run(self) -> None:
        """Run until :meth:`stop` (or SIGTERM / SIGINT when called from the main thread)."""
        try:
            asyncio.run(self._main())
        finally:
            self._threads.shutdown()
            self._db_threads.shutdown()
        if self.restart_reason is not None:
            raise WorkerRestart(self.restart_reason)

    @property
    def threads_abandoned(self) -> int:
        """Recipe threads abandoned so far (past their deadline, or lost / cancelled and still running)."""
        return self._threads.abandoned_total

    def stop(self) -> None:
        """Graceful stop: no more claims; running steps get grace_s seconds. Thread-safe."""
        if not self._stopping.is_set():
            log.info("stopping: no more claims; running steps have %.1fs to finish", self.grace_s)
        self._stopping.set()
        self._wake_soon()

    # --- main loop ---------------------------------------------------------------------------

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._inbox = self._db_threads.inbox = Inbox(self._loop)
        self._wake = Wake(self._loop)
        self._flush = asyncio.Event()
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                self._loop.add_signal_handler(sig, self.stop)
        prepare = self._prepare
        self._claim_pool = make_pool(
            self.dsn, max_size=1, name="pgflight-claim", application_name="pgflight-claim", prepare=prepare
        )
        self._control_pool = make_pool(
            self.dsn,
            max_size=self.pool_size,
            name="pgflight-control",
            application_name="pgflight-control",
            prepare=prepare,
        )
        try:
            self.worker_id = await self._db(self._control_pool, self._register, retry_for_s=None)
            log.info(
                "worker %s registered as id %s: recipes %s, concurrency %d, lease %.3gs, heartbeat %.3gs",
                self.name,
                self.worker_id,
                ",".join(self.registry.names()),
                self.concurrency,
                self.lease_s,
                self.heartbeat_s,
            )
            self._heartbeat = Heartbeat(
                self.dsn, self.worker_id, self.held, interval_s=self.heartbeat_s, on_abandon=self._on_abandon
            )
            self._heartbeat.start()
            listener = threading.Thread(target=self._listen_loop, name="pgflight-listen", daemon=True)
            if self.listen:
                listener.start()
            completer = asyncio.create_task(self._completer())
            await self._claim_loop()
            await self._shutdown()
            completer.cancel()
        finally:
            if self._heartbeat is not None:
                self._heartbeat.stop()
            self._claim_pool.close()
            self._control_pool.close()

    def _prepare(self) -> bool:
        """Whether a pool connection that opens now prepares its statements (any thread)."""
        return self.prepared

    def _probed(self, direct: bool, listener: Listener) -> None:
        """
        The LISTEN self-probe's verdict (listener thread): `direct` when notifications arrived, so
        the LISTEN connection is direct (its statements may be prepared) and, when `dsn` is also
        the LISTEN DSN, so are the pools' (auto: their connections are replaced by preparing ones).
        A pooler with prepared statements on is logged as an error (C31).
        """
        same = self.listen_dsn == self.dsn
        if direct and self.prepared_statements != "off":
            listener.prepare = True
            if listener.conn is not None:
                listener.conn.prepare_threshold = prepare_threshold(True)
        if self.prepared_statements == "auto" and direct and same and not self.prepared:
            self.prepared = True
            self._claim_pool.drain()
            self._control_pool.drain()
            log.info("direct connection (LISTEN works on it): prepared statements on")
        elif self.prepared_statements == "on" and not (direct and same):
            # a detected pooler is an error; a LISTEN DSN of its own only suggests one
            log.log(
                logging.ERROR if not direct else logging.WARNING,
                "prepared statements are on (--prepared-statements on) but %s: safe only behind "
                "PgBouncer >= 1.21 with max_prepared_statements > 0 (else DuplicatePreparedStatement "
                "errors, C31); use --prepared-statements auto or off for any other pooler.",
                "LISTEN does not work on the DSN (a transaction pooler?)"
                if not direct
                else "LISTEN has a DSN of its own (--listen-dsn: is the DSN a pooler?)",
            )

    def _register(self, conn: db.Connection) -> int:
        worker_id = db.register_worker(
            conn, self.name, hostname=socket.gethostname(), pid=os.getpid(), recipes=self.registry.names()
        )
        self.clock.sync(lambda: db.server_now(conn))
        return worker_id

    def _claim_names(self) -> list[str]:
        """The recipes a claim asks for: the registry's, less those just found unservable."""
        names = self.registry.names()
        if not self._unserved:
            return names
        now = time.monotonic()
        for name, until in list(self._unserved.items()):
            if until <= now:
                self._unserved.pop(name, None)
        return [n for n in names if n not in self._unserved]

    def _poll_interval(self) -> float:
        return self.poll_s if self.listening else self.fallback_poll_s

    async def _claim_loop(self) -> None:
        assert self._wake is not None
        backoff = 0.1
        while not self._stopping.is_set():
            self._wake.clear()
            free = self._free()
            if 0 < free < self._whole_batch() and self._backlog and self._tasks and self.claim_coalesce_s > 0:
                free = await self._more_slots(free)
                if self._stopping.is_set():
                    break  # stopped while waiting for slots: claim nothing more
            if free > 0:
                want = min(free, self.batch_size)
                try:
                    claims, want = await self._db(self._claim_pool, self._claim, want, retry_for_s=0)
                    backoff = 0.1
                except errors.UnknownWorker:
                    log.warning("worker id %s is unknown or stopped: registering again", self.worker_id)
                    self.worker_id = await self._db(self._control_pool, self._register, retry_for_s=None)
                    if self._heartbeat is not None:
                        self._heartbeat.worker_id = self.worker_id
                    continue
                except Exception as e:
                    if not is_transient(e):
                        raise
                    log.warning("claim failed (%s); retrying in %.1fs", _first_line(e), backoff)
                    await self._sleep(backoff)
                    backoff = min(backoff * 2, 2.0)
                    continue
                if want <= 0:  # the listener claimed meanwhile: its steps start at once (_adopt)
                    await self._idle()
                    continue
                log.debug("claimed %d of %d", len(claims), want)
                self._start_reserved(claims)
                if self._relay and len(claims) == want:
                    self._pass_wake_on()
                self._relay = False
                # a full batch: more may be ready, so a freed slot claims again at once; a short
                # one: the queue was empty, and what becomes ready later sends NOTIFY (or the poll)
                self._backlog = len(claims) == want
                if self._backlog and len(self._tasks) < self.concurrency:
                    continue  # more may be ready: claim again at once
            await self._idle()

    def _free(self) -> int:
        return self.concurrency - len(self._tasks) - self._reserved

    def _whole_batch(self) -> int:
        """The most one claim can take: batch_size, or every slot when the batch is larger."""
        return min(self.batch_size, self.concurrency)

    async def _more_slots(self, free: int) -> int:
        """
        While a backlog lasts, wait up to ``claim_coalesce_s`` for slots enough for a whole batch,
        so that one claim takes more rows (a claim's cost is mostly per call): the free slots then.
        """
        assert self._wake is not None
        deadline = time.monotonic() + self.claim_coalesce_s
        while free < self._whole_batch() and self._tasks and not self._stopping.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            await self._wake.wait(left)
            self._wake.clear()
            free = self._free()
        return free

    def _claim(self, conn: db.Connection, want: int) -> tuple[list[models.ClaimedStep], int]:
        """claim_batch for the loop (a db thread), at most the slots still free: (claims, asked)."""
        assert self.worker_id is not None
        with self._claim_mutex:
            want = min(want, self._free())
            if want <= 0 or self._stopping.is_set():
                return [], 0
            if self.clock.due():  # the database's clock, read again once a minute or so
                self.clock.sync(lambda: db.server_now(conn))
            claims = db.claim_batch(
                conn,
                self.worker_id,
                batch_size=want,
                lease_s=self.lease_s,
                recipes=self._claim_names(),
                start=True,
            )
            # held as reserved until the loop starts them: the mutex is released before the event
            # loop runs _start, and a listener claim in between must count these slots as taken
            self._reserve(len(claims))
            return claims, want

    def _adopt(self, claims: list[models.ClaimedStep], want: int) -> None:
        """Start what the listener claimed (event loop thread)."""
        self._start_reserved(claims)
        log.debug("claimed %d of %d (listener)", len(claims), want)
        self._backlog = len(claims) == want
        if self._backlog:
            self._pass_wake_on()  # more may be ready: wake the next idle process of the group
            self._wake_soon()  # and claim again here if a slot is left

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
            left = max(began, self._ticket_lost_at) + self._poll_interval() - time.monotonic()
            if left <= 0:
                return
            if await self._wake.wait(left):
                return

    def _pass_wake_on(self) -> None:
        """A ticket's claim came back full: more may be ready, so wake one more idle process (per group)."""
        self.relays_sent += 1
        ticket = f"relay.{self.worker_id}.{self.relays_sent}"

        async def send() -> None:
            try:
                await self._db(self._control_pool, _notify_ready, ticket, retry_for_s=0)
            except Exception as e:  # the others' poll picks the rest up
                log.warning("could not pass the wake-up on: %s", _first_line(e))

        task = asyncio.create_task(send(), name="pgflight-relay")
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _sleep(self, seconds: float) -> None:
        assert self._wake is not None
        await self._wake.wait(seconds)

    def _reserve(self, n: int) -> None:
        """Count n claimed steps not started yet as taking slots (negative: they started)."""
        with self._reserved_lock:
            self._reserved += n

    def _start_reserved(self, claims: list[models.ClaimedStep]) -> None:
        """Start steps a claim reserved slots for (event loop thread), releasing the reservation."""
        # a deadline after this is far (FAR_DEADLINE_S from now, give or take a claim's start-up)
        self._far_after = self.clock.now() + timedelta(seconds=FAR_DEADLINE_S)
        for c in claims:
            self._start(c)
        self._reserve(-len(claims))

    def _start(self, claim: models.ClaimedStep) -> None:
        held = self.held.add(claim)
        # no task name: formatting one per step cost more than the rest of _start (issue 18)
        task = asyncio.create_task(self._run(held))
        self._tasks[claim.attempt_id] = task

    def _wake_soon(self) -> None:
        """Wake the claim loop. Thread-safe; on the loop's own thread no self-pipe write."""
        loop, wake = self._loop, self._wake
        if loop is None or wake is None:
            return
        if threading.get_ident() == self._loop_thread:
            wake.set()
        elif not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(wake.set)

    def _on_abandon(self, held: Held) -> None:
        # Called by the heartbeat thread: an async recipe is interrupted; a sync one sees its
        # cancelled event (threads cannot be killed) and gets one heartbeat interval to return
        # before the worker stops waiting for it (its result would be discarded anyway).
        loop = self._loop
        task = self._tasks.get(held.claim.attempt_id)
        recipe = self.registry.get(held.claim.recipe)
        if loop is None or task is None or recipe is None:
            return
        if recipe.is_async:
            loop.call_soon_threadsafe(task.cancel)
        else:
            loop.call_soon_threadsafe(loop.call_later, self.heartbeat_s, self._stop_waiting, held.claim)

    def _stop_waiting(self, claim: models.ClaimedStep) -> None:
        """A sync recipe still running a heartbeat interval after its lease was lost or its run cancelled."""
        work, task = self._waiting.get(claim.attempt_id), self._tasks.get(claim.attempt_id)
        if work is None or task is None or work.finished:
            return
        self._abandon_thread(
            _step_name(claim), work, "did not stop after its lease was lost or its run cancelled"
        )
        task.cancel()  # _run sees the attempt lost / cancelled and writes nothing

    def _abandon_thread(self, what: str, work: _Work, why: str) -> None:
        """Stop waiting for a sync recipe's thread (a new one takes its place); restart at the limit."""
        alive = self._threads.abandon(work)
        if alive is None:
            return  # it returned meanwhile, or was abandoned already
        log.error(
            "%s %s: its thread is abandoned (%d so far, %d still running; the worker restarts at %d)",
            what,
            why,
            self._threads.abandoned_total,
            alive,
            self.max_abandoned_threads,
        )
        if alive >= self.max_abandoned_threads and self.restart_reason is None:
            self.restart_reason = f"{alive} recipe threads abandoned and still running"
            log.error(
                "%s: restarting the worker (exit %d) to get them back", self.restart_reason, EXIT_RESTART
            )
            self.stop()

    def _time_left(self, claim: models.ClaimedStep) -> float | None:
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

    async def _execute(self, held: Held, recipe: Any, ctx: StepContext) -> Any:
        """
        Run the recipe to its result, within the attempt's deadline.

        :raises DeadlineExceeded: the deadline passed (an async recipe was cancelled; a sync one's
            thread was abandoned).
        """
        claim = held.claim
        left = self._time_left(claim)
        if recipe.is_async:
            if left is None:
                return await recipe.fn(ctx)
            try:
                async with asyncio.timeout(left) as timer:
                    return await recipe.fn(ctx)
            except TimeoutError:
                if timer.expired() and held.state == "running":
                    raise _overran(claim) from None
                raise
        assert self._loop is not None and self._inbox is not None
        run = contextvars.copy_context().run  # the thread sees the attempt's span
        fut: asyncio.Future[Any] = self._loop.create_future()
        work = self._threads.submit(run, (recipe.fn, ctx), fut, self._inbox)
        self._waiting[claim.attempt_id] = work
        expiry = None if left is None else self._loop.call_later(left, _expire, fut)
        try:
            return await fut
        except _Expired:
            pass  # the deadline (the recipe's own exceptions, TimeoutError too, go on as they are)
        except BaseException:
            self._threads.give_up(work)  # cancelled before a thread took it: it never runs
            raise
        finally:
            if expiry is not None:
                expiry.cancel()
            self._waiting.pop(claim.attempt_id, None)
        held.cancelled.set()
        self._abandon_thread(_step_name(claim), work, "overran its deadline")
        raise _overran(claim)

    # --- one step ----------------------------------------------------------------------------

    async def _run(self, held: Held) -> None:
        claim = held.claim
        span = None
        try:
            stored = (
                await self._db(self._control_pool, db.run_trace_context, claim.run_id)
                if tracing.enabled()
                else None
            )
            span = tracing.start_attempt(claim, self.name, self.worker_id, stored)
            # claimed with start=True: the attempt is already running, no start_step round trip
            recipe = self.registry.get(claim.recipe)
            if recipe is None:
                # claim_batch names only our recipes, so this is a registry that changed under the
                # worker: hand the step back (no attempt spent) for a worker that serves it, and
                # leave the recipe out of this worker's claims for a while (it would claim the
                # released step again at once, in a loop)
                self._unserved[claim.recipe] = time.monotonic() + UNSERVED_SKIP_S
                log.error(
                    "attempt %s of step %s: recipe %r is not served by this worker: released",
                    claim.attempt_id,
                    claim.step_id,
                    claim.recipe,
                )
                if self.held.transition(held, RELEASED):
                    await self._release(held, f"recipe {claim.recipe} not served", retry_for_s=self.lease_s)
                return
            try:
                if claim.input_error is not None:
                    raise UndecodableInput(claim.input_error)
                ctx = StepContext(
                    claim,
                    recipe.parse_input(claim.input),
                    call=self._ctx_call,
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
                    log.info("attempt %s given back by its recipe: %s", claim.attempt_id, _first_line(e))
                    await self._release(
                        held, clean_text(str(e), limit=1000), retry_for_s=self.lease_s, after_s=e.after_s
                    )
            except BadPayload as e:
                await self._fail(held, e, retryable=False)
            except Fatal as e:
                await self._fail(held, e, retryable=False)
            except Retry as e:
                await self._fail(held, e, retry_after_s=e.after_s)
            except (errors.LeaseLost, errors.Cancelled) as e:
                await self._abandon(held, e)
            except asyncio.CancelledError:
                if held.state in (LOST, CANCELLED, RELEASED):
                    return  # interrupted on purpose (heartbeat or shutdown)
                raise
            except DeadlineExceeded as e:
                await self._fail(held, e)
                self.held.transition(held, LOST, only_from=(FINISHING,))  # a late return writes nothing
            except Exception as e:
                await self._fail(held, e)
            else:
                await self._complete(held, result, text)
        finally:
            tracing.end_attempt(span, held.state)
            self.held.remove(claim.attempt_id)
            self._tasks.pop(claim.attempt_id, None)
            self.steps_done += 1
            # a slot freed under a backlog claims at once (not when a claim sent with the
            # completions took it already: a wake-up would find nothing free)
            if (self._backlog and self._free() > 0) or self._stopping.is_set():
                self._wake_soon()

    def _ctx_call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return self._call_sync(self._control_pool, fn, *args, retry_for_s=self.lease_s, **kwargs)

    async def _complete(self, held: Held, result: Any, text: str) -> None:
        """Complete in the next complete_batch; `text` is `result` as JSON (check_json's)."""
        if not self.held.transition(held, FINISHING):
            log.info(
                "attempt %s finished after it was %s: result discarded", held.claim.attempt_id, held.state
            )
            return
        assert self._loop is not None and self._flush is not None
        fut: asyncio.Future[str] = self._loop.create_future()
        self._pending.append((held, result, text, fut))
        self._flush.set()
        try:
            outcome = await fut
        except Exception as e:
            log.error("completing attempt %s failed: %s", held.claim.attempt_id, _first_line(e))
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

    async def _completer(self) -> None:
        """
        Send pending completions, all that accumulated meanwhile in one complete_batch; while a
        backlog lasts, with the claim of the slots they free in the same statement
        (:meth:`_finish`).
        """
        assert self._flush is not None and self._loop is not None
        while True:
            await self._flush.wait()
            self._flush.clear()
            while self._pending:
                batch, self._pending = self._pending[:500], self._pending[500:]
                batch.sort(key=lambda p: p[0].claim.attempt_id)  # lock order shared with the heartbeat
                fut: asyncio.Future[tuple[list[models.BatchOutcome], _Claimed | None]]
                fut = self._loop.create_future()
                self._db_threads.submit(
                    fut,
                    self._finish,
                    (
                        [h.claim.attempt_id for h, _, _, _ in batch],
                        [h.claim.fencing_token for h, _, _, _ in batch],
                        # the JSON text check_json made, sent as it is (None stays SQL NULL)
                        [None if r is None else Jsonb(t, dumps=str) for _, r, t, _ in batch],
                    ),
                    {},
                )
                try:
                    rows, claimed = await fut
                except Exception as e:
                    if is_transient(e) or len(batch) == 1:
                        for _, _, _, f in batch:
                            if not f.done():
                                f.set_exception(e)
                        continue
                    log.warning(
                        "complete_batch of %d attempts refused (%s): completing them one by one",
                        len(batch),
                        _first_line(e),
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
                    claims, want = claimed
                    self._start_reserved(claims)
                    self.combined_claims += 1
                    log.debug("claimed %d of %d (with %d completions)", len(claims), want, len(batch))
                    self._backlog = len(claims) == want

    def _finish(
        self, attempt_ids: list[int], tokens: list[int], results: list[Any]
    ) -> tuple[list[models.BatchOutcome], _Claimed | None]:
        """
        Complete a batch (db thread): while a backlog lasts, with the claim of the slots it frees
        in one statement (:func:`db.complete_and_claim`: one round trip and one commit instead of
        two each); else, or when that statement fails, complete_batch alone, retried as before.

        :return: (the outcomes, (the claimed steps, how many were asked) or None: no claim).
        :raises Exception: complete_batch's refusal (a result the server refuses): the caller
            completes the batch one by one.
        """
        if self._backlog and not self._stopping.is_set():
            try:
                return call(self._control_pool, self._complete_claiming, attempt_ids, tokens, results)
            except errors.UnknownWorker:
                self._wake_soon()  # nothing kept: the claim loop registers again; complete alone
            except Exception as e:
                if not is_transient(e):
                    raise  # the batch was refused, the claim with it: one by one
                # lost connection: the claim is not retried (its steps, if it committed, are
                # reclaimed when their leases lapse, as a claim loop's claim); the completions are
                # sent again below, retried as complete_batch always was
        rows = self._call_sync(
            self._control_pool, db.complete_batch, attempt_ids, tokens, results, retry_for_s=self.lease_s
        )
        return rows, None

    def _complete_claiming(
        self, conn: db.Connection, attempt_ids: list[int], tokens: list[int], results: list[Any]
    ) -> tuple[list[models.BatchOutcome], _Claimed | None]:
        """
        One attempt of :meth:`_finish`'s combined statement, under the claim mutex (count the slots,
        claim, reserve them, as :meth:`_claim`); complete_batch alone when another claim holds the
        mutex (a completion never waits behind a claim, C38) or the worker is stopping.
        """
        assert self.worker_id is not None
        if not self._claim_mutex.acquire(blocking=False):
            return db.complete_batch(conn, attempt_ids, tokens, results), None
        try:
            # the batch's steps have returned: their slots are free once this statement commits
            want = min(self._free() + len(attempt_ids), self.batch_size)
            if want <= 0 or self._stopping.is_set():
                return db.complete_batch(conn, attempt_ids, tokens, results), None
            rows, claims = db.complete_and_claim(
                conn,
                self.worker_id,
                attempt_ids,
                tokens,
                results,
                batch_size=want,
                lease_s=self.lease_s,
                recipes=self.registry.names(),
            )
            self._reserve(len(claims))  # until the loop starts them (as a loop claim's)
            return rows, (claims, want)
        finally:
            self._claim_mutex.release()

    async def _complete_alone(self, held: Held, text: str | None, fut: asyncio.Future[str]) -> None:
        """
        Complete one attempt of a refused batch with complete_step_text (`text`: the result as
        JSON text, None for SQL NULL): a result the server refuses fails its step alone, in the
        same call (outcome failed), instead of an error that left the attempt claimed.
        """
        try:
            row = await self._db(
                self._control_pool,
                db.complete_step_text,
                held.claim.attempt_id,
                held.claim.fencing_token,
                text,
                retry_for_s=self.lease_s,
            )
            outcome = row.status
        except (errors.LeaseLost, errors.Cancelled) as e:
            outcome = "lease_lost" if isinstance(e, errors.LeaseLost) else "cancelled"
        except Exception as e:
            if is_transient(e):
                fut.set_exception(e)
                return
            await self._write_failure(
                held,
                Fatal(f"the database refused the result of recipe {held.claim.recipe!r}: {_with_detail(e)}"),
                retryable=False,
            )
            outcome = "result_refused"
        if not fut.done():
            fut.set_result(outcome)

    async def _fail(
        self, held: Held, exc: BaseException, *, retryable: bool = True, retry_after_s: float | None = None
    ) -> None:
        if not self.held.transition(held, FINISHING):
            log.info("attempt %s failed after it was %s: nothing written", held.claim.attempt_id, held.state)
            return
        tracing.record_error(exc)
        await self._write_failure(held, exc, retryable=retryable, retry_after_s=retry_after_s)

    async def _write_failure(
        self, held: Held, exc: BaseException, *, retryable: bool = True, retry_after_s: float | None = None
    ) -> None:
        """fail_step with `exc` as the error (its text made storable: the error must not fail too)."""
        error: dict[str, Any] = {
            "type": type(exc).__name__,
            "message": clean_text(str(exc), limit=4000),
            "traceback": clean_text("".join(traceback.format_exception(exc))[-8000:]),
        }
        if isinstance(exc, BadPayload):
            error["path"] = clean_text(exc.path)
        log.info(
            "attempt %s of step %s (%s) failed: %s: %s",
            held.claim.attempt_id,
            held.claim.step_id,
            held.claim.recipe,
            type(exc).__name__,
            _first_line(exc),
        )
        try:
            await self._db(
                self._control_pool,
                db.fail_step,
                held.claim.attempt_id,
                held.claim.fencing_token,
                error,
                retryable=retryable,
                retry_after_s=retry_after_s,
                retry_for_s=self.lease_s,
            )
        except errors.PgflightError as e:
            log.warning("fail_step of attempt %s refused: %s", held.claim.attempt_id, e)
        except Exception as e:
            log.error("fail_step of attempt %s failed: %s", held.claim.attempt_id, _first_line(e))

    async def _abandon(self, held: Held, exc: errors.PgflightError) -> None:
        if isinstance(exc, errors.Cancelled) and self.held.transition(held, CANCELLED):
            await self._release(held, "cancel acknowledged", retry_for_s=self.lease_s)
        else:
            self.held.transition(held, LOST)
        log.warning("attempt %s abandoned: %s", held.claim.attempt_id, _first_line(exc))

    async def _release(
        self, held: Held, reason: str, *, retry_for_s: float, after_s: float | None = None
    ) -> bool:
        """
        release_step with the attempt's token (shutdown, acknowledging a cancel, or a recipe's
        Release, claimable again `after_s` seconds later); True when done.
        """
        try:
            await self._db(
                self._control_pool,
                db.release_step,
                held.claim.attempt_id,
                held.claim.fencing_token,
                reason=reason,
                retry_after_s=after_s,
                retry_for_s=retry_for_s,
            )
            return True
        except Exception as e:
            log.warning(
                "could not release attempt %s (%s): %s", held.claim.attempt_id, reason, _first_line(e)
            )
            return False

    # --- shutdown ----------------------------------------------------------------------------

    async def _claims_settled(self, timeout_s: float) -> None:
        """
        Wait (at most `timeout_s`) until no claim is on the server and every claimed step has
        started. Once stopping, no claim begins (each checks under the claim mutex), but one sent
        before (the completer's combined statement, the listener's) may still commit steps leased
        to this worker: they must be run or released like the others, not left leased to a worker
        that deregisters (reclaimed only when their leases lapse, an attempt spent).
        """
        deadline = time.monotonic() + timeout_s
        while (self._claim_mutex.locked() or self._reserved > 0) and time.monotonic() < deadline:
            await asyncio.sleep(0.005)

    async def _shutdown(self) -> None:
        await self._claims_settled(max(self.grace_s, 5.0))
        tasks = list(self._tasks.values())
        if tasks:
            log.info("waiting up to %.1fs for %d running step(s)", self.grace_s, len(tasks))
            _done, pending = await asyncio.wait(tasks, timeout=self.grace_s)
            released = 0
            for h in self.held.snapshot():
                if not self.held.transition(h, RELEASED):
                    continue
                released += await self._release(h, "worker shutdown", retry_for_s=2.0)
                task = self._tasks.get(h.claim.attempt_id)
                recipe = self.registry.get(h.claim.recipe)
                if task is not None and recipe is not None and recipe.is_async:
                    task.cancel()
            if released:
                log.info("released %d step(s) still running after the grace period", released)
            # completions already queued (steps that finished in time) go out before we leave
            finishing = [t for t in pending if not t.done()]
            if finishing:
                await asyncio.wait(finishing, timeout=2.0)
        if self._pending and self._flush is not None:
            self._flush.set()
            deadline = time.monotonic() + 5
            while self._pending and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
        await asyncio.sleep(0)
        if self._heartbeat is not None:
            self._heartbeat.stop()
        try:
            await self._db(self._control_pool, db.deregister_worker, self.worker_id, retry_for_s=2.0)
        except Exception as e:
            log.warning("could not deregister: %s", _first_line(e))
        log.info("worker %s stopped", self.name)

    # --- database calls ----------------------------------------------------------------------

    async def _db(
        self, pool: Any, fn: Callable[..., T], *args: Any, retry_for_s: float | None = 30.0, **kwargs: Any
    ) -> T:
        assert self._loop is not None
        fut: asyncio.Future[T] = self._loop.create_future()
        self._db_threads.submit(
            fut, self._call_sync, (pool, fn, *args), {"retry_for_s": retry_for_s, **kwargs}
        )
        return await fut

    def _call_sync(
        self, pool: Any, fn: Callable[..., T], *args: Any, retry_for_s: float | None = 30.0, **kwargs: Any
    ) -> T:
        """
        Call a client function on a pooled connection, retrying transient failures with backoff.

        :param retry_for_s: give up after this many seconds of failures (None: retry until stopped).
        """
        deadline = None if retry_for_s is None else time.monotonic() + retry_for_s
        delay, failures = 0.05, 0
        while True:
            try:
                return call(pool, fn, *args, **kwargs)
            except Exception as e:
                if not is_transient(e):
                    raise
                failures += 1
                if deadline is not None and time.monotonic() + delay > deadline:
                    raise
                if retry_for_s is None and self._stopping.is_set() and failures > 3:
                    raise
                if failures == 1 or failures % 10 == 0:
                    log.warning(
                        "database call %s failed (%s); reconnecting with backoff",
                        getattr(fn, "__name__", fn),
                        _first_line(e),
                    )
                time.sleep(delay)
                delay = min(delay * 2, 1.0)

    # --- listener ----------------------------------------------------------------------------

    def _listen_loop(self) -> None:
        listener = Listener(self.listen_dsn)
        first, backoff = True, 0.1
        while not self._stopping.is_set():
            try:
                listener.open()  # LISTEN first, then the catch-up claim below (C33)
                if first:
                    direct = listener.probe(2.0)
                    self._probed(direct, listener)
                    if not direct:
                        log.error(
                            "LISTEN does not work on %s: a self-NOTIFY did not arrive within 2 s (a "
                            "transaction pooler such as PgBouncer, or a hot standby?). Polling every %.3gs "
                            "instead. Fix: point --listen-dsn (PGFLIGHT_LISTEN_DSN) at a direct connection "
                            "to the primary.",
                            _redact(self.listen_dsn),
                            self.fallback_poll_s,
                        )
                        listener.close()
                        self.listening = False
                        self._wake_soon()
                        return
                    first = False
                    log.info("listening on pgflight_ready (backend %s)", listener.backend_pid())
                else:
                    self.listener_reconnects += 1
                    log.warning(
                        "listener reconnected (backend %s), reconnect #%d; catching up",
                        listener.backend_pid(),
                        self.listener_reconnects,
                    )
                self.listening = True
                backoff = 0.1
                self._catch_up(listener)
                while not self._stopping.is_set():
                    payloads = listener.wait(1.0)
                    if payloads and self._answer(listener, payloads):
                        self._wake_soon()
                    self._tickets.expire(listener, time.monotonic())
            except Exception as e:
                self.listening = False
                self._tickets.forget()  # the session ended: the server released its locks
                if not is_transient(e):
                    log.exception("listener failed")
                else:
                    log.warning(
                        "listener connection lost (%s); reconnecting in %.1fs", _first_line(e), backoff
                    )
                listener.close()
                self._wake_soon()
                self._stopping.wait(backoff)
                backoff = min(backoff * 2, 2.0)
        listener.close()

    def _answer(self, listener: Listener, payloads: list[str]) -> bool:
        """
        Answer notifications (listener thread): claim for a ticket won here, in the same statement
        that tries it (one round trip, as the claim alone was); True when the loop should claim
        instead (a plain wake-up, several tickets at once, or the listener cannot claim).
        """
        free = self._free()
        if free <= 0 or self._stopping.is_set():
            return False  # busy: leave the tickets to idle processes; a freed slot claims on its own
        now = time.monotonic()
        if len(payloads) == 1 and payloads[0] and self._claim_on_listener and self.worker_id is not None:
            try:
                answer = self._claim_ticket(listener, payloads[0], now)
                self._listener_refusals = 0
                return answer
            except errors.PgflightError as e:  # an unknown worker and the like: the loop deals with it
                self._listener_refusals += 1
                if self._listener_refusals >= 3:  # e.g. the LISTEN DSN logs in as another role
                    self._claim_on_listener = False
                    log.warning(
                        "claims on the LISTEN connection refused three times (%s): the claim loop "
                        "claims after each won ticket instead (one round trip more)",
                        _first_line(e),
                    )
                return True
            except Exception as e:
                if is_transient(e):
                    raise
                self._claim_on_listener = False
                log.warning(
                    "cannot claim on the LISTEN connection (%s): wake-ups take one more round trip",
                    _first_line(e),
                )
        if self._tickets.answer(listener, payloads, free, now):
            self._relay = True
            return True
        self._ticket_lost_at = now  # someone else claims: the poll can wait
        return False

    def _catch_up(self, listener: Listener) -> None:
        """
        The catch-up claim after LISTEN (C33), on the LISTEN connection itself under a ticket of its
        own: its backend compiles claim_batch's plans now, not on the first NOTIFY (a cold first
        claim there cost up to about 100 ms at load 15, the p99 of a 100-job run).
        """
        if not self._claim_on_listener or self.worker_id is None:
            self._wake_soon()
            return
        self._catch_ups += 1
        try:
            self._claim_ticket(listener, f"catch-up.{os.getpid()}.{self._catch_ups}", time.monotonic())
        except Exception as e:
            if is_transient(e):
                raise
            log.info("catch-up claim on the listener refused (%s): the claim loop does it", _first_line(e))
            self._wake_soon()

    def _claim_ticket(self, listener: Listener, ticket: str, now: float) -> bool:
        assert listener.conn is not None and self.worker_id is not None
        with self._claim_mutex:
            want = min(self._free(), self.batch_size)
            if want <= 0:
                return False
            key = self._tickets.key(ticket)
            try:
                won, claims = claim_with_ticket(
                    listener.conn, key, self.worker_id, want, self.lease_s, self._claim_names()
                )
            except BaseException:
                # a session lock outlives the failed statement: release it with the others later
                self._tickets.hold(key, now)
                raise
            self._reserve(len(claims))
        if won:
            self._tickets.hold(key, now)
            if not claims:
                log.debug("claimed 0 of %d (listener)", want)
        else:
            self._tickets.lost += 1
            self._ticket_lost_at = now  # someone else claims: the poll can wait
        if claims:
            loop = self._loop
            if loop is None or loop.is_closed():
                return False  # stopping: the leases lapse and the steps are reclaimed
            loop.call_soon_threadsafe(self._adopt, claims, want)
        return False


CLAIM_WITH_TICKET = """
with t as materialized (
  select coalesce(pg_catalog.pg_try_advisory_lock(pgflight.wake_ticket_key(%s)), false) as won)
select t.won, case when t.won then (
         select coalesce(pg_catalog.jsonb_agg(pg_catalog.to_jsonb(c) operator(pg_catalog.||)
                                              pg_catalog.jsonb_build_object('input', c.input::text)), '[]')
           from pgflight.claim_batch(%s, %s, %s, %s, %s) c) end as claims
  from t
"""


def claim_with_ticket(
    conn: db.Connection, key: int, worker_id: int, want: int, lease_s: float, recipes: list[str]
) -> tuple[bool, list[models.ClaimedStep]]:
    """
    Try the ticket's session advisory lock (on ``pgflight.wake_ticket_key(key)``, a key only
    workers of this login's workspaces meet on) and, only when this session got it, claim_batch (start
    on claim) in the same statement: (won, claims). claim_batch is not called at all for a lost
    ticket (the claim is an init plan of the CASE branch, evaluated only when that branch is
    taken), so a loser costs one trivial statement.

    Each claim's input travels as a JSON string holding its JSON text, decoded row by row
    (:meth:`models.ClaimedStep.from_claim`): the aggregate itself is flat, so an input nested
    deeper than Python can decode fails that step alone, not the decoding of the whole batch.
    """
    with translated():
        row = conn.execute(
            CLAIM_WITH_TICKET, [key, worker_id, want, lease_s, list(recipes), Jsonb({"start": True})]
        ).fetchone()
    assert row is not None
    return bool(row[0]), [models.ClaimedStep.from_claim(c) for c in row[1] or []]


def _notify_ready(conn: db.Connection, ticket: str) -> None:
    conn.execute("select pg_catalog.pg_notify('pgflight_ready', %s)", [ticket])


class WakeTickets:
    """
    Which ``pgflight_ready`` notifications this process answers with a claim (issue 18).

    The engine's payload is the id of the transaction that made work ready, a *ticket*; a worker
    tries a session advisory lock on its LISTEN connection keyed by (its recipe set, the ticket),
    so of the idle processes serving the same recipes exactly one gets it and claims, and the
    others stay asleep. A process with other recipes has other keys, so every recipe group still
    gets one claimer (the engine does not say which recipe became ready). An empty payload (an
    engine before @v0.3.0's rework, or another sender) wakes every listener, as before.

    A won lock is held ``hold_s`` seconds, long enough for every listener to have tried it (a
    late one must not win a ticket already served), and at most ``max_held`` at once. Nothing is
    lost when the winner dies: its locks go with its session, and the other processes' poll (every
    ``poll_s``) claims what it did not.
    """

    def __init__(self, recipes: Iterable[str], *, hold_s: float = 2.0, max_held: int = 64) -> None:
        self.group = "\x1f".join(sorted(recipes))
        self.hold_s = hold_s
        self.max_held = max_held
        self.won = 0
        self.lost = 0
        self._held: deque[tuple[float, int]] = deque()

    def key(self, ticket: str) -> int:
        """The advisory lock key (signed 64 bits) of `ticket` for this recipe group."""
        # the derivation every library shares (docs/worker_protocol.md §3): mixed-language workers meet
        digest = hashlib.sha256(f"pgflight-wake\x1f{self.group}\x1f{ticket}".encode()).digest()
        return int.from_bytes(digest[:8], "big", signed=True)

    def answer(self, listener: Listener, payloads: list[str], free: int, now: float) -> bool:
        """
        Try the tickets of `payloads` (at most `free` of them): True when this process won one or
        a payload was empty (a plain wake-up).
        """
        if "" in payloads:
            return True
        keys = [self.key(p) for p in dict.fromkeys(payloads)][: max(1, free)]
        won = listener.try_tickets(keys)
        for k, w in zip(keys, won, strict=True):
            if w:
                self._held.append((now, k))
        self.won += sum(won)
        self.lost += len(won) - sum(won)
        return any(won)

    def hold(self, key: int, now: float) -> None:
        """A ticket this session won by other means (:func:`claim_with_ticket`)."""
        self._held.append((now, key))
        self.won += 1

    def expire(self, listener: Listener, now: float) -> None:
        """Release the tickets held longer than hold_s, and the oldest beyond max_held."""
        done: list[int] = []
        while self._held and (now - self._held[0][0] >= self.hold_s or len(self._held) > self.max_held):
            done.append(self._held.popleft()[1])
        if done:
            listener.release_tickets(done)

    def forget(self) -> None:
        """The LISTEN session ended (its locks with it)."""
        self._held.clear()


class Inbox:
    """
    Results that other threads hand to the event loop, delivered in one loop callback per burst.

    Each result resolves an asyncio future of the loop. The first :meth:`put` after a delivery
    wakes the loop (``call_soon_threadsafe``: one write to its self-pipe); the results put before
    that delivery runs go with it. Steps that finish together (a claimed batch) wake the loop once
    instead of once each, and no concurrent.futures.Future is built per step or database call.
    """

    __slots__ = ("_items", "_loop", "_scheduled")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._items: deque[tuple[asyncio.Future[Any], BaseException | None, Any]] = deque()
        self._scheduled = False

    def put(self, fut: asyncio.Future[Any], exc: BaseException | None, value: Any) -> None:
        """Resolve `fut` on the loop with `exc` (raised) or else `value`. Any thread."""
        self._items.append((fut, exc, value))
        if not self._scheduled:
            # set before the callback runs, cleared by it before it empties the queue: a put that
            # sees it set is appended before the delivery looks, a put that sees it clear wakes
            # the loop again (at worst a delivery finds nothing)
            self._scheduled = True
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
                self._loop.call_soon_threadsafe(self._deliver)

    def _deliver(self) -> None:
        self._scheduled = False
        items = self._items
        while items:
            fut, exc, value = items.popleft()
            if fut.done():  # cancelled meanwhile (deadline, lost lease, shutdown)
                continue
            if exc is None:
                fut.set_result(value)
                continue
            if isinstance(exc, StopIteration):
                # a future refuses StopIteration (TypeError): the step would wait forever, and the
                # results after it in this delivery with it
                wrapped = RuntimeError(f"{type(exc).__name__} raised: {exc}")
                wrapped.__cause__ = exc
                exc = wrapped
            fut.set_exception(exc)


class Wake:
    """
    The claim loop's wake-up flag (event loop thread only): like an asyncio.Event, but a wait with
    a timeout costs one future and one timer instead of asyncio.wait_for's task, futures and
    callbacks (the loop waits once per finished step while it coalesces a claim).
    """

    __slots__ = ("_loop", "_set", "_waiter")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._set = False
        self._waiter: asyncio.Future[None] | None = None

    def set(self) -> None:
        self._set = True
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    def clear(self) -> None:
        self._set = False

    def is_set(self) -> bool:
        return self._set

    async def wait(self, timeout: float) -> bool:
        """Until set, at most `timeout` seconds: whether it is set."""
        if self._set:
            return True
        w = self._waiter = self._loop.create_future()
        timer = self._loop.call_later(timeout, _wake_waiter, w)
        try:
            await w
        finally:
            self._waiter = None
            timer.cancel()
        return self._set


def _wake_waiter(w: asyncio.Future[None]) -> None:
    if not w.done():
        w.set_result(None)


class DbThreads:
    """
    The threads the event loop's database calls run on: `size` daemon threads taking calls from
    one queue, each result handed back through the :class:`Inbox`.
    """

    def __init__(self, size: int, name: str, inbox: Inbox | None = None) -> None:
        self._queue: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        self._size = size
        self._name = name
        self._started = False
        self.inbox = inbox

    def submit(
        self, fut: asyncio.Future[Any], fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        """Run ``fn(*args, **kwargs)`` on a thread and resolve `fut` with its result or exception."""
        if not self._started:
            self._started = True
            for i in range(self._size):
                threading.Thread(target=self._serve, name=f"{self._name}-{i + 1}", daemon=True).start()
        self._queue.put((fut, fn, args, kwargs))

    def _serve(self) -> None:
        inbox = self.inbox
        assert inbox is not None
        while True:
            item = self._queue.get()
            if item is None:
                return
            fut, fn, args, kwargs = item
            if fut.cancelled():  # its caller stopped waiting before it started
                continue
            try:
                value = fn(*args, **kwargs)
            except BaseException as e:
                inbox.put(fut, e, None)
            else:
                inbox.put(fut, None, value)
            del item, fut, args, kwargs  # no reference to the last call's values while idle

    def shutdown(self) -> None:
        """Let the threads end once the calls queued before are done."""
        if self._started:
            for _ in range(self._size):
                self._queue.put(None)


class _Work:
    """One sync recipe run on a :class:`StepThreads` thread."""

    __slots__ = ("abandoned", "args", "finished", "fn", "fut", "inbox", "skip", "started")

    def __init__(
        self, fn: Callable[..., Any], args: tuple[Any, ...], fut: asyncio.Future[Any], inbox: Inbox
    ) -> None:
        self.fn = fn
        self.args = args
        self.fut = fut
        self.inbox = inbox
        self.started = False  # a thread took it
        self.finished = False  # fn returned or raised
        self.skip = False  # given up before a thread took it: never run
        self.abandoned = False


class StepThreads:
    """
    The threads sync recipes run on: `size` daemon threads taking work from one queue.

    A thread whose recipe overran is *abandoned* (:meth:`abandon`): the worker stops waiting for
    it and a new thread takes its place, so the pool keeps `size` threads available; the abandoned
    one ends when its recipe finally returns (if ever). Daemon threads, so a recipe that never
    returns cannot keep the process from exiting. A result goes back through an :class:`Inbox`.
    """

    def __init__(self, size: int, name: str) -> None:
        self._queue: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._name = name
        self._started = 0
        self._live = 0
        self.abandoned_total = 0
        self.abandoned_alive = 0
        for _ in range(size):
            self._spawn()

    def _spawn(self) -> None:
        self._started += 1
        self._live += 1
        threading.Thread(target=self._serve, name=f"{self._name}-{self._started}", daemon=True).start()

    def submit(
        self, fn: Callable[..., Any], args: tuple[Any, ...], fut: asyncio.Future[Any], inbox: Inbox
    ) -> _Work:
        """Run ``fn(*args)`` on a pool thread; `fut` gets its result or exception through `inbox`."""
        work = _Work(fn, args, fut, inbox)
        self._queue.put(work)
        return work

    def give_up(self, work: _Work) -> None:
        """The worker no longer waits for `work`: if no thread took it yet, none will."""
        with self._lock:
            if not work.started:
                work.skip = True

    def abandon(self, work: _Work) -> int | None:
        """
        Stop counting on the thread running `work` and start another in its place.

        :return: abandoned threads still running, this one included; None when `work` is done,
            was abandoned already or never started (nothing changed; one not started never will).
        """
        with self._lock:
            if not work.started:
                work.skip = True
                return None
            if work.abandoned or work.finished:
                return None
            work.abandoned = True
            self.abandoned_total += 1
            self.abandoned_alive += 1
            self._spawn()
            return self.abandoned_alive

    def _serve(self) -> None:
        lock = self._lock
        while True:
            work = self._queue.get()
            if work is None:
                return
            with lock:
                if work.skip:
                    continue
                work.started = True
            exc: BaseException | None = None
            value: Any = None
            try:
                value = work.fn(*work.args)
            except BaseException as e:  # Parked is a BaseException: it travels to the loop too
                exc = e
            with lock:
                work.finished = True
                abandoned = work.abandoned
                if abandoned:  # a replacement took this thread's place
                    self.abandoned_alive -= 1
                    self._live -= 1
            work.inbox.put(work.fut, exc, value)
            if abandoned:
                return
            del work, exc, value  # no reference to the last step's values while idle

    def shutdown(self) -> None:
        """Let the idle threads end (abandoned ones end when their recipe returns, or with the process)."""
        with self._lock:
            n = self._live
        for _ in range(n):
            self._queue.put(None)


class _Expired(Exception):
    """A sync recipe's deadline passed while the worker waited for it (set on its future by a timer)."""


def _expire(fut: asyncio.Future[Any]) -> None:
    if not fut.done():
        fut.set_exception(_Expired())


class UndecodableInput(Fatal):
    """
    A claimed step's input this worker cannot decode (JSON nested deeper than Python's decoder
    can recurse): the step is failed without retry (dead letter), the process and the other
    steps of its batch carry on.
    """


def _overran(claim: models.ClaimedStep) -> DeadlineExceeded:
    return DeadlineExceeded(
        f"deadline exceeded: the attempt ran past max_runtime_s (deadline {claim.deadline_at}); "
        "the worker stopped waiting for the recipe"
    )


def _step_name(claim: models.ClaimedStep) -> str:
    return f"recipe {claim.recipe!r} of attempt {claim.attempt_id} (step {claim.step_id})"


def _redact(dsn: str) -> str:
    import re

    return re.sub(r"(password=|:)[^@\s]+@", r"\1***@", dsn)


def _with_detail(e: BaseException) -> str:
    """The first line of an error and the server's DETAIL when it has one (psycopg errors)."""
    detail = getattr(getattr(e, "diag", None), "message_detail", None)
    return f"{_first_line(e)} ({detail})" if detail else _first_line(e)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
