"""
What `show` and `runs` say of a step parked on a wait: ``waiting (event NAME:KEY)`` or ``waiting
(sleep until TIME)`` instead of ``waiting (approval)``, and the step's ordinary state again once
the event comes.
"""

from __future__ import annotations

from datetime import UTC
from typing import Any

import psycopg

from pgflight import db
from test_cli import _claim, pgflight, submit


def test_show_and_runs_name_the_event_or_the_sleep_a_step_waits_for(
    dsn: str, conn: psycopg.Connection[Any]
) -> None:
    paid = submit(conn, "pay")
    _, c = _claim(conn, "w-pay", ["pay"])
    assert db.wait_event(conn, c.attempt_id, c.fencing_token, "paid", "order.paid", "42").waiting
    nap = submit(conn, "nap")
    _, c2 = _claim(conn, "w-nap", ["nap"])
    timer = db.wait_timer(conn, c2.attempt_id, c2.fencing_token, "sleep:cool-off", 3600)
    assert timer.waiting

    shown = pgflight(dsn, "show", str(paid), columns=120)
    assert shown.returncode == 0, shown.stderr
    assert "waiting (event order.paid:42)" in shown.stdout
    until = f"{timer.due_at.astimezone(UTC):%Y-%m-%d %H:%M:%S}"
    assert f"waiting (sleep until {until})" in pgflight(dsn, "show", str(nap), columns=120).stdout
    listing = pgflight(dsn, "runs", columns=160).stdout
    assert "waiting (event order.paid:42)" in listing and "waiting (sleep until" in listing

    db.emit_event(conn, "default", "order.paid", "42", {"usd": 1})
    shown = pgflight(dsn, "show", str(paid), columns=120)
    assert "waiting (event" not in shown.stdout and "queued" in shown.stdout
