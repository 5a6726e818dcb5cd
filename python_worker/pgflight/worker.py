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
- the heartbeat thread (:mod:`pgflight.heartbeat`) with its own connection;
- the listener thread: LISTEN ``pgflight_ready`` on a direct connection, self-probed at startup
  (C32: on failure one actionable error, then fast polling), re-established when it drops, LISTEN
  first and then a catch-up claim (C33), each reconnect logged.

Every DB call is one short autocommit transaction; a lost connection or a restarting server is
retried with backoff (C37). A step body runs only with a token a claim of this process returned
(C10). After the heartbeat reports a lost lease the worker writes nothing for that attempt; after
a cancel it acknowledges with release_step. SIGTERM / SIGINT: stop claiming, let running steps
finish for ``grace_s`` seconds, release the rest (no attempt spent, C39); SIGKILL loses nothing,
the lease lapses and the step is reclaimed elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import json
import logging
import os
import signal
import socket
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from pgflight import db, errors, models, tracing
from pgflight.db.connection import Listener, call, is_transient, make_pool
from pgflight.heartbeat import CANCELLED, FINISHING, LOST, RELEASED, Heartbeat, Held, HeldSet, clamp_interval
from pgflight.recipes import REGISTRY, Fatal, Parked, Registry, Retry, StepContext, load_modules

log = logging.getLogger("pgflight.worker")
T = TypeVar("T")


class Worker:
    """
    One worker process's runtime.

    :param dsn: where to connect (may be a transaction-mode PgBouncer).
    :param recipes: a registry, or module names to import (default: the process-wide registry).
    :param concurrency: steps run at once.
    :param batch_size: most steps per claim (default: concurrency).
    :param lease_s: lease in seconds; heartbeats renew it every lease/3 at most.
    :param heartbeat_s: heartbeat interval in seconds (clamped to lease/3, C04).
    :param grace_s: seconds running steps get to finish after SIGTERM before they are released.
    :param poll_s: claim poll interval in seconds while LISTEN works.
    :param fallback_poll_s: poll interval in seconds when LISTEN does not (pooler, standby).
    :param listen_dsn: DSN of the LISTEN connection (default: `dsn`); should be direct, not pooled.
    :param listen: False to poll only.
    :param pool_size: connections of the control pool.
    """

    def __init__(
        self,
        dsn: str,
        recipes: Registry | Iterable[str] | None = None,
        *,
        concurrency: int = 4,
        batch_size: int | None = None,
        lease_s: float = 30.0,
        heartbeat_s: float | None = None,
        grace_s: float = 10.0,
        poll_s: float = 2.0,
        fallback_poll_s: float = 0.25,
        listen_dsn: str | None = None,
        listen: bool = True,
        pool_size: int = 2,
        name: str | None = None,
    ) -> None:
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
        self._stopping = threading.Event()
        self._threads = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="pgflight-step")
        self._db_threads = ThreadPoolExecutor(
            max_workers=self.pool_size + 2, thread_name_prefix="pgflight-db"
        )
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._pending: list[tuple[Held, Any, asyncio.Future[str]]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._flush: asyncio.Event | None = None
        self._heartbeat: Heartbeat | None = None
        self._backlog = True  # the last claim filled its batch: a freed slot should claim at once

    # --- public ------------------------------------------------------------------------------

    def run(self) -> None:
        """Run until :meth:`stop` (or SIGTERM / SIGINT when called from the main thread)."""
        try:
            asyncio.run(self._main())
        finally:
            self._threads.shutdown(wait=False, cancel_futures=True)
            self._db_threads.shutdown(wait=False, cancel_futures=True)

    def stop(self) -> None:
        """Graceful stop: no more claims; running steps get grace_s seconds. Thread-safe."""
        if not self._stopping.is_set():
            log.info("stopping: no more claims; running steps have %.1fs to finish", self.grace_s)
        self._stopping.set()
        self._wake_soon()

    # --- main loop ---------------------------------------------------------------------------

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._flush = asyncio.Event()
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                self._loop.add_signal_handler(sig, self.stop)
        self._claim_pool = make_pool(
            self.dsn, max_size=1, name="pgflight-claim", application_name="pgflight-claim"
        )
        self._control_pool = make_pool(
            self.dsn, max_size=self.pool_size, name="pgflight-control", application_name="pgflight-control"
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

    def _register(self, conn: db.Connection) -> int:
        return db.register_worker(
            conn, self.name, hostname=socket.gethostname(), pid=os.getpid(), recipes=self.registry.names()
        )

    def _poll_interval(self) -> float:
        return self.poll_s if self.listening else self.fallback_poll_s

    async def _claim_loop(self) -> None:
        assert self._wake is not None
        backoff = 0.1
        while not self._stopping.is_set():
            self._wake.clear()
            free = self.concurrency - len(self._tasks)
            if free > 0:
                want = min(free, self.batch_size)
                try:
                    claims = await self._db(
                        self._claim_pool,
                        db.claim_batch,
                        self.worker_id,
                        batch_size=want,
                        lease_s=self.lease_s,
                        recipes=self.registry.names(),
                        start=True,
                        retry_for_s=0,
                    )
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
                for c in claims:
                    self._start(c)
                # a full batch: more may be ready, so a freed slot claims again at once; a short
                # one: the queue was empty, and what becomes ready later sends NOTIFY (or the poll)
                self._backlog = len(claims) == want
                if self._backlog and len(self._tasks) < self.concurrency:
                    continue  # more may be ready: claim again at once
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self._poll_interval())

    async def _sleep(self, seconds: float) -> None:
        assert self._wake is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout=seconds)

    def _start(self, claim: models.ClaimedStep) -> None:
        held = self.held.add(claim)
        task = asyncio.create_task(self._run(held))
        self._tasks[claim.attempt_id] = task

    def _wake_soon(self) -> None:
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(wake.set)

    def _on_abandon(self, held: Held) -> None:
        # Called by the heartbeat thread: an async recipe can be interrupted; a sync one only sees
        # its cancelled event (threads cannot be killed) and its result will be discarded.
        loop = self._loop
        task = self._tasks.get(held.claim.attempt_id)
        recipe = self.registry.get(held.claim.recipe)
        if loop is not None and task is not None and recipe is not None and recipe.is_async:
            loop.call_soon_threadsafe(task.cancel)

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
            if recipe is None:  # cannot happen: claims name only our recipes
                await self._fail(held, Fatal(f"no recipe {claim.recipe!r} in this worker"), retryable=False)
                return
            try:
                ctx = StepContext(
                    claim,
                    recipe.parse_input(claim.input),
                    call=self._ctx_call,
                    cancelled=held.cancelled,
                    on_park=lambda: self.held.transition(held, FINISHING),
                    on_unpark=lambda: self.held.transition(held, "running", only_from=(FINISHING,)),
                    lost=lambda: held.state == LOST,
                )
                if recipe.is_async:
                    result = await recipe.fn(ctx)
                else:
                    assert self._loop is not None
                    run = contextvars.copy_context().run  # the thread sees the attempt's span
                    result = await self._loop.run_in_executor(self._threads, run, recipe.fn, ctx)
                json.dumps(result)
            except Parked:
                log.debug("attempt %s parked", claim.attempt_id)
                return
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
            except TypeError as e:
                if "JSON serializable" in str(e):
                    await self._fail(
                        held,
                        Fatal(f"recipe {claim.recipe!r} returned a non-JSON result: {e}"),
                        retryable=False,
                    )
                else:
                    await self._fail(held, e)
            except Exception as e:
                await self._fail(held, e)
            else:
                await self._complete(held, result)
        finally:
            tracing.end_attempt(span, held.state)
            self.held.remove(claim.attempt_id)
            self._tasks.pop(claim.attempt_id, None)
            self.steps_done += 1
            if self._backlog or self._stopping.is_set():
                self._wake_soon()

    def _ctx_call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return self._call_sync(self._control_pool, fn, *args, retry_for_s=self.lease_s, **kwargs)

    async def _complete(self, held: Held, result: Any) -> None:
        if not self.held.transition(held, FINISHING):
            log.info(
                "attempt %s finished after it was %s: result discarded", held.claim.attempt_id, held.state
            )
            return
        assert self._loop is not None and self._flush is not None
        fut: asyncio.Future[str] = self._loop.create_future()
        self._pending.append((held, result, fut))
        self._flush.set()
        try:
            outcome = await fut
        except Exception as e:
            log.error("completing attempt %s failed: %s", held.claim.attempt_id, _first_line(e))
            return
        if outcome != "succeeded":
            log.warning("completion of attempt %s refused (%s): abandoned", held.claim.attempt_id, outcome)

    async def _completer(self) -> None:
        """Send pending completions, all that accumulated meanwhile in one complete_batch."""
        assert self._flush is not None
        while True:
            await self._flush.wait()
            self._flush.clear()
            while self._pending:
                batch, self._pending = self._pending[:500], self._pending[500:]
                batch.sort(key=lambda p: p[0].claim.attempt_id)  # lock order shared with the heartbeat
                try:
                    rows = await self._db(
                        self._control_pool,
                        db.complete_batch,
                        [h.claim.attempt_id for h, _, _ in batch],
                        [h.claim.fencing_token for h, _, _ in batch],
                        [r for _, r, _ in batch],
                        retry_for_s=self.lease_s,
                    )
                except Exception as e:
                    for _, _, fut in batch:
                        if not fut.done():
                            fut.set_exception(e)
                    continue
                outcome = {r.attempt_id: r.outcome for r in rows}
                for h, _, fut in batch:
                    if not fut.done():
                        fut.set_result(outcome.get(h.claim.attempt_id, "lease_lost"))

    async def _fail(
        self, held: Held, exc: BaseException, *, retryable: bool = True, retry_after_s: float | None = None
    ) -> None:
        if not self.held.transition(held, FINISHING):
            log.info("attempt %s failed after it was %s: nothing written", held.claim.attempt_id, held.state)
            return
        tracing.record_error(exc)
        error = {
            "type": type(exc).__name__,
            "message": str(exc)[:4000],
            "traceback": "".join(traceback.format_exception(exc))[-8000:],
        }
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

    async def _release(self, held: Held, reason: str, *, retry_for_s: float) -> bool:
        """release_step with the attempt's token (shutdown, or acknowledging a cancel); True when done."""
        try:
            await self._db(
                self._control_pool,
                db.release_step,
                held.claim.attempt_id,
                held.claim.fencing_token,
                reason=reason,
                retry_for_s=retry_for_s,
            )
            return True
        except Exception as e:
            log.warning(
                "could not release attempt %s (%s): %s", held.claim.attempt_id, reason, _first_line(e)
            )
            return False

    # --- shutdown ----------------------------------------------------------------------------

    async def _shutdown(self) -> None:
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
        return await self._loop.run_in_executor(
            self._db_threads,
            functools.partial(self._call_sync, pool, fn, *args, retry_for_s=retry_for_s, **kwargs),
        )

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
                    if not listener.probe(2.0):
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
                self._wake_soon()
                while not self._stopping.is_set():
                    if listener.wait(1.0):
                        self._wake_soon()
            except Exception as e:
                self.listening = False
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


def _redact(dsn: str) -> str:
    import re

    return re.sub(r"(password=|:)[^@\s]+@", r"\1***@", dsn)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
