"""
The worker runtime's composition: :class:`Worker` builds its parts, hands each the callbacks it
needs (no part imports another's owner, so no import circle) and runs them.

::

    Worker(dsn, load_modules(["myapp.recipes"]), concurrency=8).run()   # until SIGTERM / SIGINT

The parts, one job each (one process):

- :class:`~pgflight.worker.producer.Producer`: every claim (the claim loop's, the listener's
  ticket claim, the completer's combined claim), one at a time;
- :class:`~pgflight.worker.executor.Executor`: each claimed step as an asyncio task (async recipes
  on the loop, sync ones on a thread pool), within its deadline;
- :class:`~pgflight.worker.completer.Completer`: completions in batches, failures, releases;
- :class:`~pgflight.heartbeat.Heartbeat`: its own thread and connection renewing every lease;
- :class:`~pgflight.worker.listener.ListenLoop`: LISTEN and the wake tickets;
- :func:`~pgflight.worker.shutdown.shut_down`: the graceful stop.

A claim pool (1 connection) and a control pool (``pool_size`` connections) for the writes and the
step context's calls, so a completion never waits behind a claim (C38); the loop's calls run on
``pool_size + 2`` database threads (:class:`~pgflight.worker.threads.DbThreads`), and what the
database and step threads return reaches the loop through one
:class:`~pgflight.worker.threads.Inbox`. SIGTERM / SIGINT: stop claiming, let running steps finish
for ``grace_s`` seconds, release the rest; when ``max_abandoned_threads`` recipe threads overran
and still run, the worker stops the same way and :meth:`Worker.run` raises
:class:`~pgflight.worker.common.WorkerRestart` (exit 75) for its supervisor to start a fresh
process.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import threading
from collections.abc import Iterable

from pgflight import db, models
from pgflight.db.connection import Listener, make_pool, prepare_threshold
from pgflight.db.payload import DEFAULT_MAX_BYTES
from pgflight.heartbeat import Heartbeat, HeldSet, clamp_interval
from pgflight.recipes import REGISTRY, Registry, load_modules
from pgflight.server_clock import ServerClock
from pgflight.settings import env_number
from pgflight.worker.calls import Lane
from pgflight.worker.common import EXIT_RESTART, PREPARED_MODES, WorkerRestart, log
from pgflight.worker.completer import Completer
from pgflight.worker.executor import Executor
from pgflight.worker.listener import ListenLoop
from pgflight.worker.producer import Producer
from pgflight.worker.shutdown import shut_down
from pgflight.worker.threads import DbThreads, Inbox, StepThreads, Wake


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
        1.15 to 0.63 ms). Completions that would free less than a whole batch wait as long for the
        other running steps' before the statement that completes them and claims their slots.
        Never waits when the queue was found short, so a quiet queue's wake-up latency is
        unchanged. 0 claims at once; at most 1. Default 0.005.
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
        # the database's clock, which deadline_at is on: never the host's wall clock
        self.clock = ServerClock()
        self._stopping = threading.Event()
        self._threads = StepThreads(concurrency, "pgflight-step")
        self._db_threads = DbThreads(self.pool_size + 2, "pgflight-db")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: Wake | None = None
        self._heartbeat: Heartbeat | None = None
        # the parts (built when the event loop runs, in _main)
        self._producer: Producer | None = None
        self._executor: Executor | None = None
        self._listen_loop: ListenLoop | None = None

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

    def stop(self) -> None:
        """Graceful stop: no more claims; running steps get grace_s seconds. Thread-safe."""
        if not self._stopping.is_set():
            log.info("stopping: no more claims; running steps have %.1fs to finish", self.grace_s)
        self._stopping.set()
        self._wake_soon()

    @property
    def threads_abandoned(self) -> int:
        """Recipe threads abandoned so far (past their deadline, or lost / cancelled and still running)."""
        return self._threads.abandoned_total

    @property
    def steps_done(self) -> int:
        """Attempts ended so far (completed, failed, released, parked or abandoned)."""
        return self._executor.steps_done if self._executor is not None else 0

    @property
    def combined_claims(self) -> int:
        """Claims sent in the statement of a batch's completions (``complete_and_claim``)."""
        return self._producer.combined_claims if self._producer is not None else 0

    @property
    def relays_sent(self) -> int:
        """Wake-ups passed on to another idle process after a ticket's claim came back full."""
        return self._producer.relays_sent if self._producer is not None else 0

    @property
    def listening(self) -> bool:
        """Whether LISTEN works now (else the worker polls every fallback_poll_s)."""
        return self._listen_loop is not None and self._listen_loop.listening

    @property
    def listener_reconnects(self) -> int:
        """Times the LISTEN connection was established again after it dropped."""
        return self._listen_loop.reconnects if self._listen_loop is not None else 0

    # --- main loop ---------------------------------------------------------------------------

    async def _main(self) -> None:
        loop = self._loop = asyncio.get_running_loop()
        inbox = self._db_threads.inbox = Inbox(loop)
        wake = self._wake = Wake(loop)
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.stop)
        self._claim_pool = make_pool(
            self.dsn,
            max_size=1,
            name="pgflight-claim",
            application_name="pgflight-claim",
            prepare=self._prepare,
        )
        self._control_pool = make_pool(
            self.dsn,
            max_size=self.pool_size,
            name="pgflight-control",
            application_name="pgflight-control",
            prepare=self._prepare,
        )
        tasks: dict[int, asyncio.Task[None]] = {}  # the running attempts, by attempt id
        control = Lane(self._control_pool, self._db_threads, self._stopping, retry_for_s=self.lease_s)
        self._registering = control.within(None)
        producer = self._producer = Producer(
            registry=self.registry,
            concurrency=self.concurrency,
            batch_size=self.batch_size,
            lease_s=self.lease_s,
            claim_coalesce_s=self.claim_coalesce_s,
            clock=self.clock,
            stopping=self._stopping,
            running=tasks,
            start=self._start,
            worker_id=self._worker_id,
            register_again=self._register_again,
            poll_interval=self._poll_interval,
        )
        producer.bind(
            loop,
            wake,
            Lane(self._claim_pool, self._db_threads, self._stopping, retry_for_s=0),
            control.within(0),
        )
        completer = Completer(
            held=self.held,
            loop=loop,
            control=control,
            claim_with=producer.complete_and_claim,
            wants_claim=producer.wants_claim,
            short_of_batch=producer.short_of_batch,
            coalesce_s=self.claim_coalesce_s,
            adopt=producer.adopt_combined,
            unknown_worker=self._wake_soon,
        )
        executor = self._executor = Executor(
            name=self.name,
            registry=self.registry,
            held=self.held,
            tasks=tasks,
            threads=self._threads,
            clock=self.clock,
            control=control,
            completer=completer,
            loop=loop,
            inbox=inbox,
            heartbeat_s=self.heartbeat_s,
            max_result_bytes=self.max_result_bytes,
            max_abandoned_threads=self.max_abandoned_threads,
            worker_id=self._worker_id,
            skip=producer.skip,
            slot_freed=self._slot_freed,
            restart=self._restart,
        )
        self._listen_loop = ListenLoop(
            listen_dsn=self.listen_dsn,
            fallback_poll_s=self.fallback_poll_s,
            producer=producer,
            stopping=self._stopping,
            probed=self._probed,
            wake=self._wake_soon,
            worker_id=self._worker_id,
        )
        try:
            self.worker_id = await self._registering.run(self._register)
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
                self.dsn,
                self.worker_id,
                self.held,
                interval_s=self.heartbeat_s,
                on_abandon=executor.on_abandon,
            )
            self._heartbeat.start()
            if self.listen:
                threading.Thread(target=self._listen_loop.run, name="pgflight-listen", daemon=True).start()
            completing = asyncio.create_task(completer.loop())
            await producer.loop()
            await shut_down(
                name=self.name,
                worker_id=self.worker_id,
                grace_s=self.grace_s,
                producer=producer,
                executor=executor,
                completer=completer,
                heartbeat=self._heartbeat,
                control=control,
            )
            completing.cancel()
        finally:
            if self._heartbeat is not None:
                self._heartbeat.stop()
            self._claim_pool.close()
            self._control_pool.close()

    # --- the parts' callbacks ----------------------------------------------------------------

    def _worker_id(self) -> int | None:
        return self.worker_id

    def _start(self, claims: list[models.ClaimedStep]) -> None:
        assert self._executor is not None
        self._executor.start_all(claims)

    def _poll_interval(self) -> float:
        listening = self._listen_loop is not None and self._listen_loop.listening
        return self.poll_s if listening else self.fallback_poll_s

    def _slot_freed(self) -> None:
        """A step ended: a slot freed under a backlog claims at once (not when a claim sent with the
        completions took it already: a wake-up would find nothing free); a stopping worker checks
        whether it is done."""
        producer = self._producer
        if (producer is not None and producer.backlog and producer.free() > 0) or self._stopping.is_set():
            self._wake_soon()

    def _restart(self, reason: str) -> None:
        """Too many recipe threads abandoned and still running: stop, and have run() raise WorkerRestart."""
        if self.restart_reason is not None:
            return
        self.restart_reason = reason
        log.error("%s: restarting the worker (exit %d) to get them back", reason, EXIT_RESTART)
        self.stop()

    def _wake_soon(self) -> None:
        """Wake the claim loop. Thread-safe."""
        if self._wake is not None:
            self._wake.poke()

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

    async def _register_again(self) -> None:
        """The server no longer knows this worker (ZF010): register anew, the heartbeat with it."""
        self.worker_id = await self._registering.run(self._register)
        if self._heartbeat is not None:
            self._heartbeat.worker_id = self.worker_id
