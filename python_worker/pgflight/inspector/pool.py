"""
The inspector's and the metrics endpoint's connections: autocommit, a statement timeout, JSON
decoded so that a value too deep to decode stays text. Both servers import it; neither imports
the other.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.types.json import set_json_loads
from psycopg_pool import ConnectionPool

from pgflight.inspector import view

CONNECT_KWARGS: dict[str, Any] = {
    "autocommit": True,
    "prepare_threshold": None,
    "connect_timeout": 5,
    "application_name": "pgflight-inspector",
    "options": "-c statement_timeout=15000",
}


def page_json(conn: psycopg.Connection[Any]) -> None:
    """Decode json/jsonb on `conn` with :func:`view.loads` (a value too deep to decode stays text)."""
    set_json_loads(view.loads, conn)


def open_pool(dsn: str, *, max_size: int = 4) -> ConnectionPool:
    """Autocommit connections with a statement timeout, so a slow page cannot hold the server."""
    return ConnectionPool(
        dsn,
        min_size=1,
        max_size=max_size,
        name="pgflight-inspector",
        open=True,
        timeout=10.0,
        kwargs=CONNECT_KWARGS,
        configure=page_json,
    )
