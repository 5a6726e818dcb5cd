"""
What the tests of cells share (docs/scaling.md): the servers' settings, starting N cells behind a
proxy (skipped, saying why, without PL/Proxy), and reading a cell directly as its superuser.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

from pgflight import cells

SETTINGS = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "log_min_messages": "warning",
}


@contextmanager
def cells_or_skip(
    n: int, *, logins: dict[str, str], password: str, cron: bool = False
) -> Iterator[cells.LocalCells]:
    """`cells.local_cells` with the test servers' settings; the test is skipped without PL/Proxy."""
    try:
        with cells.local_cells(n, logins=logins, password=password, settings=SETTINGS, cron=cron) as lc:
            yield lc
    except cells.CellsError as e:
        if "PL/Proxy is not installed" not in str(e):
            raise
        pytest.skip(str(e))


def cell_rows(dsn: str, query: str, params: Any = None) -> list[tuple[Any, ...]]:
    """The rows of `query` read directly in one cell (or any database) as `dsn`'s login."""
    with psycopg.connect(dsn, autocommit=True) as c:
        return c.execute(query, params).fetchall()
