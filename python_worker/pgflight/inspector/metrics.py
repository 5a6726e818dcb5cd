"""
Prometheus metrics of a pgflight database, from one read function (`pgflight.metrics_snapshot`).

Gauges come straight from each call. The transition counters (completions, failures, reclaims,
dead letters, stale writes refused) are this exporter's own: each call returns the events after
the exporter's cursor (at most ``max_events``), the exporter adds them and keeps the new cursor.
They start from the beginning of the events log and catch up ``max_events`` per scrape, so a
restart of the exporter is a counter reset that `rate()` absorbs. ``pgflight_claims_total`` is the
fencing-token sequence (one value per claim ever made), the same for every exporter.

Usage::

    registry = CollectorRegistry()
    registry.register(SnapshotCollector(pool))
    generate_latest(registry)
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import psycopg
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from psycopg_pool import ConnectionPool

from pgflight.cells import CELL_SHIFT
from pgflight.inspector import guard
from pgflight.inspector.pool import open_pool

GAUGES: dict[str, str] = {
    "queue_ready": "Attempts queued and available now, by workspace and recipe.",
    "queue_delayed": "Attempts queued for later (backoff, not_before), by workspace and recipe.",
    "in_flight": "Attempts leased to a worker (claimed, running, cancel_requested), by workspace and recipe.",
    "parked": "Attempts waiting for children or an approval, by workspace and recipe.",
    "oldest_ready_age_seconds": "Age in seconds of the oldest ready attempt, by workspace and recipe.",
    "dead_letters": "Steps dead-lettered now.",
    "expired_leases": "Leases past expiry not reclaimed yet.",
    "sweep_lag_seconds": "Seconds since the oldest unreclaimed lease expired (reclaim sweep lag).",
    "workers_alive": "Workers heard from in the last 60 seconds.",
    "waits_parked": "Steps parked on a timer or an event wait, by workspace and kind.",
    "waits_oldest_age_seconds": "Age in seconds of the oldest parked timer or event wait, by kind.",
    "model_calls_today": "Model calls this UTC day, by workspace and model.",
    "input_tokens_today": "Input tokens this UTC day, by workspace and model.",
    "output_tokens_today": "Output tokens this UTC day, by workspace and model.",
    "usd_today": "USD spent on model calls this UTC day, by workspace and model.",
    "notification_queue_usage": "pg_notification_queue_usage(): fraction of the NOTIFY queue in use.",
    "oldest_xmin_age": "Age in transactions of the oldest xmin holding back vacuum, by source.",
}
#: Through a proxy of cells, the figures that cannot be summed over the cells (ages, lags, a
#: server's own health, workers that every cell lists): one series per cell, labelled ``cell``.
PER_CELL = frozenset(
    {
        "oldest_ready_age_seconds",
        "sweep_lag_seconds",
        "waits_oldest_age_seconds",
        "notification_queue_usage",
        "oldest_xmin_age",
        "workers_alive",
    }
)
EVENT_KINDS: dict[str, str] = {
    "completions": "Attempts that succeeded.",
    "failures": "Attempts that ended failed, lease_expired, timed_out or dead_letter.",
    "reclaims": "Attempts reclaimed after their lease expired.",
    "dead_lettered": "Steps dead-lettered.",
    "stale_writes_refused": "Writes refused because they carried a superseded fencing token.",
}


class SnapshotCollector(Collector):
    """
    A prometheus_client collector that reads `pgflight.metrics_snapshot` once per scrape.

    :param pool: connections to the database (any lane that may read: reader or operator).
    :param max_events: events counted per scrape at most (the catch-up step of the counters).
    """

    def __init__(self, pool: ConnectionPool, *, max_events: int = 100_000) -> None:
        self.pool = pool
        self.max_events = max_events
        self.cursor = 0
        self.counts: dict[str, float] = dict.fromkeys(EVENT_KINDS, 0.0)
        self.last_read_s = 0.0
        self.cell_cursors: dict[int, int] = {}  # through a proxy of cells: each cell's events cursor
        self._lock = threading.Lock()

    def _read(self) -> list[tuple[str, dict[str, Any], float]]:
        t0 = time.perf_counter()
        with self.pool.connection() as conn:
            cells = proxy_cells(conn)
            if cells is None:
                rows = conn.execute(
                    "select metric, labels, value from pgflight.metrics_snapshot(%s, %s)",
                    [self.cursor, self.max_events],
                ).fetchall()
                out = [(str(m), dict(labels or {}), float(v or 0)) for m, labels, v in rows]
            else:
                out = self._read_cells(conn, cells)
        self.last_read_s = time.perf_counter() - t0
        return out

    def _read_cells(self, conn: Any, cells: list[int]) -> list[tuple[str, dict[str, Any], float]]:
        """
        Through a proxy of cells (docs/scaling.md): each cell's snapshot with that cell's own events
        cursor (event ids name their cell, so one cursor cannot serve two cells). Figures of
        `PER_CELL` get a ``cell`` label; every other figure with the same labels is summed over the
        cells. ``pgflight_cell_up`` says which cells answered; a cell that did not is left out.
        """
        summed: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        for cell in cells:
            try:
                rows = conn.execute(
                    "select metric, labels, value from pgflight_via.metrics_snapshot(%s, %s, %s)",
                    [cell - 1, self.cell_cursors.get(cell, 0), self.max_events],
                ).fetchall()
            except (psycopg.OperationalError, psycopg.errors.InternalError_):  # a cell down
                summed[("cell_up", (("cell", str(cell)),))] = 0.0
                continue
            summed[("cell_up", (("cell", str(cell)),))] = 1.0
            for metric, labels, value in rows:
                name = str(metric)
                if name == "events_cursor":
                    self.cell_cursors[cell] = int(value or 0)
                    continue
                if name == "claims_total":  # the cell's token sequence, started at its id range
                    value = max(0.0, float(value or 0) - float(cell << CELL_SHIFT))
                shown = {str(k): str(v) for k, v in dict(labels or {}).items()}
                if name in PER_CELL:
                    shown["cell"] = str(cell)
                key = (name, tuple(sorted(shown.items())))
                summed[key] = summed.get(key, 0.0) + float(value or 0)
        return [(m, dict(labels), v) for (m, labels), v in summed.items()]

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            rows = self._read()
            for metric, labels, value in rows:
                if metric == "events_delta" and labels.get("kind") in self.counts:
                    self.counts[labels["kind"]] += value
                elif metric == "events_cursor":
                    self.cursor = int(value)
            counts = dict(self.counts)
        families: dict[str, GaugeMetricFamily] = {}
        for metric, labels, value in rows:
            if metric not in GAUGES:
                continue
            fam = families.get(metric)
            if fam is None:
                fam = families[metric] = GaugeMetricFamily(
                    f"pgflight_{metric}", GAUGES[metric], labels=sorted(labels)
                )
            fam.add_metric([str(labels[k]) for k in sorted(labels)], value)
        yield from families.values()
        claims = next((v for m, _, v in rows if m == "claims_total"), 0.0)
        yield CounterMetricFamily("pgflight_claims", "Claims ever made (the fencing-token sequence).", claims)
        for kind, help_ in EVENT_KINDS.items():
            yield CounterMetricFamily(f"pgflight_{kind}", help_ + " Counted by this exporter.", counts[kind])
        up = [(labels["cell"], value) for metric, labels, value in rows if metric == "cell_up"]
        if up:
            fam = GaugeMetricFamily(
                "pgflight_cell_up",
                "Through a proxy of cells: 1 when the cell answered this scrape.",
                labels=["cell"],
            )
            for cell, value in up:
                fam.add_metric([cell], value)
            yield fam
        yield GaugeMetricFamily(
            "pgflight_metrics_read_seconds", "Duration of the last metrics_snapshot read.", self.last_read_s
        )


def proxy_cells(conn: Any) -> list[int] | None:
    """The cell numbers behind a proxy of cells (docs/scaling.md), or None for one database."""
    row = conn.execute("select to_regclass('pgflight_cells.cells') is not null").fetchone()
    if not row or not row[0]:
        return None
    return [int(r[0]) for r in conn.execute("select cell from pgflight_cells.cells order by cell").fetchall()]


WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def host_guarded(app: WSGIApp, hosts: frozenset[str]) -> WSGIApp:
    """
    `app` answering only requests whose ``Host`` names this exporter (`hosts`: the loopback names,
    the bound host, the ``--allow-host`` names; see :func:`pgflight.inspector.guard.host_names`);
    any other ``Host``, or none, answers 421. A web page whose name was rebound to this machine
    (DNS rebinding) sends its own name and reads nothing.
    """

    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:

        name = guard.split_host(environ.get("HTTP_HOST", ""))
        if name is None or name not in hosts:
            start_response("421 Misdirected Request", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"misdirected request: this exporter answers only to its own host names (--allow-host)\n"]
        return app(environ, start_response)

    return guarded


def serve_metrics(
    dsn: str, host: str = "127.0.0.1", port: int = 9187, allow_hosts: list[str] | tuple[str, ...] = ()
) -> None:
    """
    Serve /metrics for the database `dsn` on host:port until interrupted.

    :param allow_hosts: host names scrapers use besides the loopback names and `host` (required
        for a wildcard bind, 0.0.0.0 or ::, which names no host of its own).
    :raises guard.Refused: a wildcard bind without `allow_hosts`; checked before anything binds.
    """
    from wsgiref.simple_server import make_server

    from prometheus_client import CollectorRegistry
    from prometheus_client.exposition import ThreadingWSGIServer, _SilentHandler, make_wsgi_app

    check_metrics_bind(host, allow_hosts)
    hosts = guard.host_names(host, allow_hosts)
    pool = open_pool(dsn)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(pool))

    class Server(ThreadingWSGIServer):
        """The exporter's server, for an IPv6 address too."""

    if ":" in host.strip("[]"):
        Server.address_family = socket.AF_INET6
    httpd = make_server(
        host.strip("[]"),
        port,
        host_guarded(make_wsgi_app(registry), hosts),
        Server,
        handler_class=_SilentHandler,
    )
    try:
        httpd.serve_forever()
    finally:
        httpd.server_close()
        pool.close()


def check_metrics_bind(host: str, allow_hosts: list[str] | tuple[str, ...] = ()) -> None:
    """
    Refuse a wildcard bind (0.0.0.0, ::) without ``--allow-host``: every scrape would name a host
    the exporter does not know and answer 421.

    :raises guard.Refused: with what to do instead.
    """
    if host.strip("[]") in guard.WILDCARDS and not [a for a in allow_hosts if a.strip()]:
        raise guard.Refused(
            f"refusing to serve metrics on {host} without the names scrapers reach it by: give each"
            " with --allow-host (requests naming any other host are refused)"
        )
