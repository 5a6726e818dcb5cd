"""
Connections for pgflight clients: safe behind PgBouncer in transaction mode, easy to retry.

- Every connection is autocommit (each API call is its own short transaction: nothing is held
  while a step runs, C37) and keeps no session state (no SET, no advisory locks). By default it
  has ``prepare_threshold=None``: no server-side prepared statements, whose per-connection names
  collide on a transaction pooler (C31). ``prepare=True`` (:func:`connect`, :func:`make_pool`)
  prepares a statement from its :data:`PREPARE_THRESHOLD`-th execution on: only for a connection
  known to be direct (the worker decides it from its LISTEN self-probe: ``--prepared-statements``)
  or a pooler that keeps prepared statements per client (PgBouncer >= 1.21 with
  ``max_prepared_statements`` > 0).
- :func:`is_transient` tells a lost connection or a server restart (retry after a backoff) from a
  refusal by the API (never retried).
- :class:`Listener` is the one session-state user, LISTEN, on its own direct connection, with a
  self-probe that detects a pooler or a standby that silently drops notifications (C32), and
  the session advisory locks of the wake tickets (:meth:`Listener.try_tickets`) on that same
  connection.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool, PoolTimeout

from pgflight.db.core import Connection

log = logging.getLogger("pgflight.db")

P = ParamSpec("P")
T = TypeVar("T")
READY_CHANNEL = "pgflight_ready"
# executions of one statement text before psycopg prepares it on the server (psycopg's default):
# the hot calls get there at once, a one-off call (register_worker) stays unprepared
PREPARE_THRESHOLD = 5


def prepare_threshold(prepare: bool) -> int | None:
    """psycopg's ``prepare_threshold`` for a connection that prepares (or not) its statements."""
    return PREPARE_THRESHOLD if prepare else None


def connect(
    dsn: str, *, application_name: str = "pgflight", connect_timeout_s: int = 5, prepare: bool = False
) -> Connection:
    """
    Open one autocommit connection, without prepared statements unless `prepare`.

    :param connect_timeout_s: seconds to wait for the server.
    :param prepare: prepare each statement on the server from its :data:`PREPARE_THRESHOLD`-th
        execution (a direct connection only, C31).
    :raises psycopg.OperationalError: the server cannot be reached.
    """
    return psycopg.connect(
        dsn,
        autocommit=True,
        prepare_threshold=prepare_threshold(prepare),
        connect_timeout=connect_timeout_s,
        application_name=application_name,
    )


def make_pool(
    dsn: str,
    *,
    max_size: int,
    name: str,
    application_name: str = "pgflight",
    prepare: Callable[[], bool] | None = None,
) -> ConnectionPool:
    """
    A small pool of autocommit connections (opened in the background), unprepared unless `prepare`.

    :param max_size: most connections it holds.
    :param prepare: asked as each connection opens: True to prepare its statements (as
        :func:`connect`'s `prepare`); a change reaches the pool's connections after
        ``pool.drain()``. None: never.
    """
    kwargs: dict[str, Any] = {
        "autocommit": True,
        "prepare_threshold": None,
        "connect_timeout": 5,
        "application_name": application_name,
    }

    def configure(conn: Connection) -> None:
        if prepare is not None:
            conn.prepare_threshold = prepare_threshold(prepare())

    return ConnectionPool(
        dsn,
        min_size=1,
        max_size=max_size,
        name=name,
        kwargs=kwargs,
        configure=configure if prepare is not None else None,
        open=True,
        timeout=5.0,
        reconnect_timeout=3600.0,
    )


def is_stale_prepared(exc: BaseException) -> bool:
    """
    True for a statement prepared before a schema change that changed its result columns
    (SQLSTATE 0A000 from PostgreSQL's RevalidateCachedQuery, "cached plan must not change result
    type"; e.g. `pgflight migrate` replaced a function's OUT columns while workers ran with
    prepared statements). The connection's prepared statements are stale; a new connection
    prepares them again (psycopg keeps them per connection: psycopg/psycopg#511).
    """
    if not isinstance(exc, psycopg.errors.FeatureNotSupported):
        return False
    # the C function's name, whatever the server's lc_messages; the message for older servers
    return exc.diag.source_function == "RevalidateCachedQuery" or "cached plan must not change" in str(exc)


def is_transient(exc: BaseException) -> bool:
    """
    True for errors worth retrying on a new connection: lost connection, restart, timeout, a
    prepared statement made stale by a schema change (:func:`is_stale_prepared`).
    """
    return isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout)) or (
        is_stale_prepared(exc)
    )


def call(
    pool: ConnectionPool, fn: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
) -> T:
    """
    Run one client function on a pooled connection (one attempt, no retry). A connection whose
    prepared statements a schema change made stale is closed, so the pool replaces it and a retry
    (the error is transient) prepares them again.
    """
    with pool.connection() as conn:
        try:
            return fn(conn, *args, **kwargs)
        except psycopg.errors.FeatureNotSupported as e:
            if is_stale_prepared(e):
                conn.close()
            raise


class Listener:
    """
    LISTEN on ``pgflight_ready`` on a dedicated direct connection.

    Not thread-safe: one thread owns it. :meth:`open` issues LISTEN; :meth:`wait` returns when a
    notification arrives or the timeout passes; a dropped connection raises a transient error
    from :meth:`wait`, after which the owner calls :meth:`close` and :meth:`open` again.
    """

    def __init__(
        self, dsn: str, *, channel: str = READY_CHANNEL, application_name: str = "pgflight-listen"
    ) -> None:
        self.dsn = dsn
        self.channel = channel
        self.application_name = application_name
        self.conn: Connection | None = None
        self.prepare = False  # prepare this connection's statements (set once the probe passed)

    def open(self) -> None:
        """Connect and LISTEN."""
        self.close()
        conn = connect(self.dsn, application_name=self.application_name, prepare=self.prepare)
        conn.execute(sql.SQL("listen {}").format(sql.Identifier(self.channel)))
        self.conn = conn

    def backend_pid(self) -> int | None:
        """The server process id of the listening connection."""
        return self.conn.info.backend_pid if self.conn is not None else None

    def wait(self, timeout_s: float) -> list[str]:
        """
        Wait for notifications on the channel.

        :param timeout_s: most seconds to wait.
        :return: the payloads that arrived (empty when none did).
        :raises psycopg.OperationalError: the connection dropped.
        """
        assert self.conn is not None
        return [n.payload for n in self.conn.notifies(timeout=timeout_s, stop_after=1)]

    def try_tickets(self, keys: list[int]) -> list[bool]:
        """
        Try the session advisory lock of each key, without waiting: True where this session got it
        (it holds it until :meth:`release_tickets` or the connection ends). The lock is on
        ``pgflight.wake_ticket_key(key)``, which only this login's worker lanes map to; a login
        with no worker lane gets no key, and every ticket counts as won (a plain wake-up).
        """
        assert self.conn is not None
        rows = self.conn.execute(
            "select coalesce(pg_catalog.pg_try_advisory_lock(pgflight.wake_ticket_key(k)), true)"
            " from unnest(%s::bigint[]) with ordinality t(k, i) order by i",
            [keys],
        ).fetchall()
        return [bool(r[0]) for r in rows]

    def release_tickets(self, keys: list[int]) -> None:
        """Release session advisory locks :meth:`try_tickets` took."""
        assert self.conn is not None
        self.conn.execute(
            "select pg_catalog.pg_advisory_unlock(pgflight.wake_ticket_key(k)) from unnest(%s::bigint[]) k",
            [keys],
        )

    def probe(self, timeout_s: float = 2.0) -> bool:
        """
        Check that notifications really arrive: LISTEN a unique channel, NOTIFY it from another
        connection, wait up to `timeout_s` seconds. False behind a transaction pooler or on a
        standby (where NOTIFY raises).
        """
        assert self.conn is not None
        channel = f"pgflight_probe_{uuid.uuid4().hex[:12]}"
        ident = sql.Identifier(channel)
        self.conn.execute(sql.SQL("listen {}").format(ident))
        try:
            with connect(self.dsn, application_name=f"{self.application_name}-probe") as other:
                other.execute(sql.SQL("notify {}").format(ident))
            deadline = time.monotonic() + timeout_s
            while (left := deadline - time.monotonic()) > 0:
                for n in self.conn.notifies(timeout=left, stop_after=1):
                    if n.channel == channel:
                        return True
            return False
        except psycopg.Error as e:
            log.debug("LISTEN probe failed: %s", e)
            return False
        finally:
            with contextlib.suppress(psycopg.Error):
                self.conn.execute(sql.SQL("unlisten {}").format(ident))

    def close(self) -> None:
        """Close the connection (idempotent)."""
        if self.conn is not None:
            with contextlib.suppress(psycopg.Error):
                self.conn.close()
            self.conn = None
