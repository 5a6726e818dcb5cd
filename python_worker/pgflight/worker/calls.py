"""
The worker's database calls, typed by the function they call.

A :class:`Lane` is one pool and one retry window. ``lane(fn, *args)`` runs ``fn(conn, *args)``
on a pooled connection in the calling thread (a recipe's thread, a database thread);
``await lane.run(fn, *args)`` runs it on a database thread for the event loop. Both check the
arguments against `fn`'s own signature (``Callable[Concatenate[Connection, P], T]``), so the
fencing token a write carries is an ``int`` from the claim to the ``pgflight.db`` function, and
finding the usages of a ``pgflight.db`` function finds the worker's calls too.

Every call is one short autocommit transaction; a lost connection or a restarting server is
retried with backoff (C37) for the lane's `retry_for_s` seconds (None: until the worker stops).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

from psycopg_pool import ConnectionPool

from pgflight.db import Connection
from pgflight.db.connection import call, is_transient
from pgflight.worker.common import first_line, log
from pgflight.worker.threads import DbThreads

P = ParamSpec("P")
T = TypeVar("T")


class Lane:
    """One pool and one retry window of the worker's database calls."""

    __slots__ = ("_stopping", "_threads", "pool", "retry_for_s")

    def __init__(
        self,
        pool: ConnectionPool,
        threads: DbThreads,
        stopping: threading.Event,
        retry_for_s: float | None = 30.0,
    ) -> None:
        self.pool = pool
        self.retry_for_s = retry_for_s
        self._threads = threads
        self._stopping = stopping

    def within(self, retry_for_s: float | None) -> Lane:
        """The same pool with another retry window."""
        return Lane(self.pool, self._threads, self._stopping, retry_for_s)

    def once(self, fn: Callable[Concatenate[Connection, P], T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(conn, *args, **kwargs)`` on a pooled connection, one attempt (no retry)."""
        return call(self.pool, fn, *args, **kwargs)

    def __call__(
        self, fn: Callable[Concatenate[Connection, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``fn(conn, *args, **kwargs)`` on a pooled connection, transient failures retried with backoff."""
        retry_for_s = self.retry_for_s
        deadline = None if retry_for_s is None else time.monotonic() + retry_for_s
        delay, failures = 0.05, 0
        while True:
            try:
                return call(self.pool, fn, *args, **kwargs)
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
                        first_line(e),
                    )
                time.sleep(delay)
                delay = min(delay * 2, 1.0)

    async def run(
        self, fn: Callable[Concatenate[Connection, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """:meth:`__call__` on a database thread, awaited on the event loop."""
        fut: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._threads.submit(fut, lambda: self(fn, *args, **kwargs))
        return await fut

    async def off_loop(self, fn: Callable[[], T]) -> T:
        """``fn()`` (which makes its own calls on this lane) on a database thread, awaited on the loop."""
        fut: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._threads.submit(fut, fn)
        return await fut
