"""
A worker that claims a step of a recipe it cannot run (its registry names the recipe but has no
function for it) releases the step and leaves that recipe out of its claims for a while, instead
of claiming the released step again at once in a loop. Real worker (a thread of the test process,
as the worker login over scram) against a real database.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg

from conftest import Logins
from pgflight import db
from pgflight.recipes import Registry
from pgflight.worker import Worker
from security_support import grant
from worker_support import one, wait_for

Conn = psycopg.Connection[Any]


class _Lying(Registry):
    """A registry that names a recipe it has no function for (one changed under its worker)."""

    def names(self) -> list[str]:
        return [*super().names(), "ghost"]


def test_a_released_unservable_recipe_is_not_claimed_again_in_a_hot_loop(
    conn: Conn, dsn: str, logins: Logins
) -> None:
    """One step of the unservable recipe, one worker (LISTEN on, polling every 0.1 s) for 3 s: the step is
    released once (not thousands of times), stays at attempt 1, and the worker still runs the
    recipe it does serve meanwhile."""
    db.create_workspace(conn, "ghosts")
    grant(conn, "pgf_worker_a", "ghosts", "worker")
    ghost = db.submit_run(conn, "ghosts", "ghost", {}).run_id
    reg = _Lying()
    reg.add("real", lambda ctx: {"ok": True})
    w = Worker(logins.dsn("pgf_worker_a", dsn), reg, concurrency=2, lease_s=5, poll_s=0.1, name="liar")
    t = threading.Thread(target=w.run, daemon=True)
    t.start()
    try:
        wait_for(
            lambda: one(
                conn,
                "select count(*) from pgflight.run_events where run_id = %s and reason = 'released'",
                ghost,
            ),
            20,
            "the first release",
        )
        real = db.submit_run(conn, "ghosts", "real", {}).run_id
        time.sleep(3)
        wait_for(
            lambda: (
                one(conn, "select status = 'succeeded' from pgflight.step_status where run_id = %s", real)
                or None
            ),
            20,
            "the served recipe's step to succeed",
        )
    finally:
        w.stop()
        t.join(20)
    releases = one(
        conn, "select count(*) from pgflight.run_events where run_id = %s and reason = 'released'", ghost
    )
    assert releases <= 2, releases
    row = conn.execute(
        "select status, attempt_no, failed_attempts from pgflight.step_status where run_id = %s", [ghost]
    ).fetchone()
    assert row == ("queued", 1, 0)
