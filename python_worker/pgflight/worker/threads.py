"""
The worker's threads and how their results reach the event loop.

- :class:`Inbox`: results other threads hand to the loop, one loop wake-up per burst (the thread
  hops were most of a no-op step's CPU before);
- :class:`Wake`: the claim loop's wake-up flag, settable from any thread (:meth:`Wake.poke`);
- :class:`DbThreads`: the threads the loop's database calls run on;
- :class:`StepThreads`: the threads sync recipes run on, a thread that overran *abandoned* and
  replaced.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


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
    The claim loop's wake-up flag (event loop thread, but :meth:`poke` from any): like an
    asyncio.Event, but a wait with a timeout costs one future and one timer instead of
    asyncio.wait_for's task, futures and callbacks (the loop waits once per finished step while it
    coalesces a claim).
    """

    __slots__ = ("_loop", "_set", "_thread", "_waiter")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._thread = threading.get_ident()  # made on the loop's thread
        self._set = False
        self._waiter: asyncio.Future[None] | None = None

    def poke(self) -> None:
        """Set the flag from any thread; on the loop's own thread no self-pipe write."""
        if threading.get_ident() == self._thread:
            self.set()
        elif not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                self._loop.call_soon_threadsafe(self.set)

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
        self._queue: queue.SimpleQueue[tuple[asyncio.Future[Any], Callable[[], Any]] | None] = (
            queue.SimpleQueue()
        )
        self._size = size
        self._name = name
        self._started = False
        self.inbox = inbox

    def submit(self, fut: asyncio.Future[T], fn: Callable[[], T]) -> None:
        """Run ``fn()`` on a thread and resolve `fut` with its result or exception."""
        if not self._started:
            self._started = True
            for i in range(self._size):
                threading.Thread(target=self._serve, name=f"{self._name}-{i + 1}", daemon=True).start()
        self._queue.put((fut, fn))

    def _serve(self) -> None:
        inbox = self.inbox
        assert inbox is not None
        while True:
            item = self._queue.get()
            if item is None:
                return
            fut, fn = item
            if fut.cancelled():  # its caller stopped waiting before it started
                continue
            try:
                value = fn()
            except BaseException as e:
                inbox.put(fut, e, None)
            else:
                inbox.put(fut, None, value)
            del item, fut, fn  # no reference to the last call's values while idle

    def shutdown(self) -> None:
        """Let the threads end once the calls queued before are done."""
        if self._started:
            for _ in range(self._size):
                self._queue.put(None)


class Work:
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
        self._queue: queue.SimpleQueue[Work | None] = queue.SimpleQueue()
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
    ) -> Work:
        """Run ``fn(*args)`` on a pool thread; `fut` gets its result or exception through `inbox`."""
        work = Work(fn, args, fut, inbox)
        self._queue.put(work)
        return work

    def give_up(self, work: Work) -> None:
        """The worker no longer waits for `work`: if no thread took it yet, none will."""
        with self._lock:
            if not work.started:
                work.skip = True

    def abandon(self, work: Work) -> int | None:
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


class Expired(Exception):
    """A sync recipe's deadline passed while the worker waited for it (set on its future by a timer)."""


def expire(fut: asyncio.Future[Any]) -> None:
    """Fail a pending future with Expired (a call the worker stopped waiting for)."""
    if not fut.done():
        fut.set_exception(Expired())
