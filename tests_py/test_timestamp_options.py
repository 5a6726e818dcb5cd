"""
A timestamptz option (submit_run's and submit_runs' `not_before`, the one in the options catalogue)
is validated by `_check_options` itself, the one validator every API function runs: it needs a
date, a time of day and a UTC offset. A date alone ("2030-01-01", whose "-01" is no offset), a
timestamp without an offset, or a word PostgreSQL reads as an instant ("tomorrow", "now",
"epoch") would be read in the session's time zone or clock, which the client may not know; they
are refused with 22023 naming the option, in any session time zone. Operator login over scram.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from conftest import Logins
from security_support import grant, login_connect

Conn = psycopg.Connection[Any]

REFUSED = [
    "2030-01-01",
    "2030-01-01 ",
    "2030-01-01T09:00:00",
    "2030-01-01 09:00",
    "tomorrow",
    "now",
    "epoch",
    "2030-01-01 -01",
    "Jan 1 2030 09:00 UTC",
]


@pytest.fixture
def operator(conn: Conn, dsn: str, logins: Logins) -> Iterator[Conn]:
    conn.execute("select pgflight.create_workspace('ts')")
    grant(conn, "pgf_operator_a", "ts", "operator")
    with login_connect(logins.dsn("pgf_operator_a", dsn)) as c:
        yield c


def _error(conn: Conn, query: str, params: list[Any]) -> psycopg.Error | None:
    try:
        conn.execute(query, params)
    except psycopg.Error as e:
        return e
    return None


def test_a_timestamptz_option_without_a_time_of_day_and_an_offset_is_refused_by_the_validator(
    conn: Conn, operator: Conn
) -> None:
    """
    submit_runs checks its shared options with _check_options before it reads any run: with no
    run at all, a date-only or zone-less not_before was accepted (nothing else looked at it).
    Refused with 22023 naming the option, in any session time zone; nothing is written.
    """
    for zone in ("UTC", "Pacific/Kiritimati"):
        operator.execute("select set_config('TimeZone', %s, false)", [zone])
        for value in REFUSED:
            e = _error(
                operator, "select * from pgflight.submit_runs('ts', '[]', %s)", [Jsonb({"not_before": value})]
            )
            assert e is not None and e.sqlstate == "22023", (zone, value, e)
            assert "not_before" in str(e.diag.message_primary), (value, e)
            e = _error(
                conn, "select pgflight._check_options('submit_run', %s)", [Jsonb({"not_before": value})]
            )
            assert e is not None and e.sqlstate == "22023", (value, e)
    assert conn.execute("select count(*) from pgflight.runs").fetchone() == (0,)


def test_a_timestamptz_option_with_a_time_of_day_and_an_offset_is_accepted(
    conn: Conn, operator: Conn
) -> None:
    """The same option written whole passes the validator and submit_run."""
    for value in [
        "2030-01-01T09:00:00Z",
        "2030-01-01 09:00+02:00",
        "2030-01-01T09:00:00.5-05:30",
        "2030-01-01t09:00 utc",
    ]:
        got = conn.execute(
            "select pgflight._check_options('submit_run', %s) ->> 'not_before'",
            [Jsonb({"not_before": value})],
        ).fetchone()
        assert got == (value,)
        row = operator.execute(
            "select run_id from pgflight.submit_run('ts', 'r', '{}', %s)", [Jsonb({"not_before": value})]
        ).fetchone()
        assert row is not None and row[0] is not None
