"""
The wake relay of a cell deployment (docs/scaling.md, "Wake-ups across cells").

NOTIFY is per database: a run submitted through the proxy notifies ``pgflight_ready`` in its
cell, where no worker of the proxy listens. The relay LISTENs on every cell (one thread and one
connection each) and, for each notification, in one transaction of the proxy, records that the
cell announced work (``pgflight_cells.wakes``: a claim through the proxy then visits that cell
even if it marked it quiet a moment before) and NOTIFYs ``pgflight_ready`` on the proxy with the
ticket, prefixed by the cell (``c2.<xid>``: two cells' transaction ids never make one ticket). The
unchanged worker, whose listener is on the proxy database, wakes as on one database: one idle
process wins the ticket and claims.

A cell's listener that drops reconnects (backoff 0.05 s doubling to 1 s) and, once LISTENing
again, relays a plain wake-up (an empty payload) for that cell: what was notified while it was
away is claimed then, so no wake is lost to a restart, only delayed by it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping

import psycopg

from pgflight.db.connection import Listener

log = logging.getLogger("pgflight.cells")

RELAY_SQL = """
with w as (
  insert into pgflight_cells.wakes (cell, at) values (%(cell)s, extract(epoch from clock_timestamp()))
  on conflict (cell) do update set at = excluded.at
  returning 1)
select pg_notify('pgflight_ready', p) from w, unnest(%(payloads)s::text[]) p
"""


class Relay:
    """
    Relay each cell's ``pgflight_ready`` notifications to the proxy, one thread per cell.

    :param proxy_dsn: the proxy database, as a login that may write ``pgflight_cells.wakes`` (its
        administrator); the cells are reached with the same user and password unless `cell_dsns`.
    """

    def __init__(
        self, proxy_dsn: str, *, cell_dsns: Mapping[int, str] | None = None, max_backoff_s: float = 1.0
    ) -> None:
        from pgflight.cells_move import admin_dsns

        self.proxy_dsn = proxy_dsn
        self.cells = dict(cell_dsns or admin_dsns(proxy_dsn))
        self.max_backoff_s = max_backoff_s
        self.relayed = 0
        self.reconnects = dict.fromkeys(self.cells, 0)
        self.listening = dict.fromkeys(self.cells, False)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """Start one listening thread per cell (daemon threads)."""
        for cell, dsn in self.cells.items():
            t = threading.Thread(target=self._run, args=(cell, dsn), name=f"relay-cell{cell}", daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        """Stop the threads and close their connections."""
        self._stop.set()
        for t in self._threads:
            t.join(5)

    def wait_listening(self, timeout_s: float = 10.0) -> bool:
        """Whether every cell is listened to within `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if all(self.listening.values()):
                return True
            time.sleep(0.02)
        return False

    def _run(self, cell: int, dsn: str) -> None:
        listener = Listener(dsn, application_name=f"pgflight-relay-cell{cell}")
        proxy: psycopg.Connection[tuple[object, ...]] | None = None
        first, backoff = True, 0.05
        while not self._stop.is_set():
            try:
                listener.open()
                if proxy is None or proxy.closed:
                    proxy = psycopg.connect(
                        self.proxy_dsn, autocommit=True, application_name="pgflight-relay"
                    )
                if not first:
                    self.reconnects[cell] += 1
                    log.warning(
                        "relay: cell %s listened to again (reconnect #%d)", cell, self.reconnects[cell]
                    )
                first = False
                self.listening[cell] = True
                backoff = 0.05
                # notifications sent while nobody listened are gone: one plain wake-up stands for them
                self._forward(proxy, cell, [""])
                while not self._stop.is_set():
                    payloads = listener.wait(0.5)
                    if payloads:
                        self._forward(
                            proxy, cell, [f"c{cell}.{p}" if p else "" for p in dict.fromkeys(payloads)]
                        )
            except Exception as e:  # a cell or the proxy went away: reconnect after a backoff
                self.listening[cell] = False
                log.warning(
                    "relay: cell %s: %s; reconnecting in %.2fs", cell, str(e).splitlines()[0], backoff
                )
                listener.close()
                if proxy is not None and proxy.broken:
                    proxy.close()
                    proxy = None
                self._stop.wait(backoff)
                backoff = min(backoff * 2, self.max_backoff_s)
        self.listening[cell] = False
        listener.close()
        if proxy is not None:
            proxy.close()

    def _forward(self, proxy: psycopg.Connection[tuple[object, ...]], cell: int, payloads: list[str]) -> None:
        proxy.execute(RELAY_SQL, {"cell": cell, "payloads": payloads})
        with self._lock:
            self.relayed += len(payloads)
