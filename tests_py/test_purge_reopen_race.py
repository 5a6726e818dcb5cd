"""
purge_finished racing retry_step / replay_from on real connections (operator logins over scram):
a step purged under a reopen answers ZF003 (unknown step), never a 23502 from an attempt inserted
without its run, and the two take their locks in one order (the run row before any steps row),
so they never deadlock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from conftest import Logins
from security_support import grant, login_connect

Conn = psycopg.Connection[Any]


def _finished_step(su: Conn, how: str, recipe: str = "r") -> int:
    """A one-step run that ended: succeeded (for replay_from) or dead-lettered (for retry_step)."""
    step = su.execute("select step_id from pgflight.submit_run('purge', %s, '{}')", [recipe]).fetchone()
    assert step is not None
    wid = su.execute("select pgflight.register_worker('w')").fetchone()
    assert wid is not None
    claim = su.execute(
        "select attempt_id, fencing_token from pgflight.claim_batch(%s, 1, 30, %s, '{\"start\": true}')",
        [wid[0], [recipe]],
    ).fetchone()
    assert claim is not None
    if how == "succeeded":
        su.execute("select * from pgflight.complete_step(%s, %s, '{}')", list(claim))
    else:
        su.execute(
            "select * from pgflight.fail_step(%s, %s, '{}', %s)", [*claim, Jsonb({"retryable": False})]
        )
    return int(step[0])


@pytest.fixture
def ops(conn: Conn, dsn: str, logins: Logins) -> Iterator[Callable[[], Conn]]:
    """Operator logins of every workspace (purge_finished needs that), each with timeouts."""
    conn.execute("select pgflight.create_workspace('purge')")
    grant(conn, "pgf_operator_a", None, "operator")
    opened: list[Conn] = []

    def open_one() -> Conn:
        c = login_connect(logins.dsn("pgf_operator_a", dsn), timeout_s=20)
        opened.append(c)
        return c

    yield open_one
    for c in opened:
        c.close()


REOPENS = {"replay_from": "succeeded", "retry_step": "dead_letter"}


def _sqlstate(fn: Callable[[], Any]) -> str | None:
    try:
        fn()
    except psycopg.Error as e:
        return e.sqlstate
    return None


@pytest.mark.parametrize("reopen", sorted(REOPENS))
def test_a_step_purged_under_a_reopen_is_unknown(conn: Conn, ops: Callable[[], Conn], reopen: str) -> None:
    """The purge holds the run (its transaction open); the reopen waits on a lock, and once the
    purge commits it answers ZF003. Before, it waited on the step row, found nothing, and inserted
    an attempt without a run: 23502."""
    step = _finished_step(conn, REOPENS[reopen])
    purger, reopener = ops(), ops()
    time.sleep(0.01)  # finished strictly before the purge's now
    with purger.transaction():
        assert purger.execute("select pgflight.purge_finished(0)").fetchone() == (1,)
        pid = reopener.info.backend_pid
        got: list[str | None] = []
        t = threading.Thread(
            target=lambda: got.append(
                _sqlstate(lambda: reopener.execute(f"select pgflight.{reopen}(%s)", [step]))
            )
        )
        t.start()
        deadline = time.monotonic() + 10
        while conn.execute(
            "select wait_event_type from pg_stat_activity where pid = %s", [pid]
        ).fetchone() != ("Lock",):
            assert time.monotonic() < deadline, "the reopen never waited on the purge's locks"
            assert t.is_alive(), got
            time.sleep(0.02)
    t.join(20)
    assert got == ["ZF003"]
    assert conn.execute("select count(*) from pgflight.steps").fetchone() == (0,)


@pytest.mark.parametrize("reopen", sorted(REOPENS))
def test_purge_and_reopen_raced_freely_never_deadlock(
    conn: Conn, ops: Callable[[], Conn], reopen: str
) -> None:
    """80 rounds of one purge and one reopen of the same finished step, started together: each
    round the reopen either wins (the run is running again, not purged) or answers ZF003 (the
    run is gone); no 40P01, no 23502."""
    purger, reopener = ops(), ops()
    outcomes: dict[str, int] = {}
    for i in range(80):
        step = _finished_step(conn, REOPENS[reopen], f"r{i}")  # a recipe each: no reopened step claimed
        time.sleep(0.002)
        barrier = threading.Barrier(2)
        results: dict[str, str | None] = {}

        def purge(barrier: threading.Barrier = barrier, results: dict[str, str | None] = results) -> None:
            barrier.wait()
            results["purge"] = _sqlstate(lambda: purger.execute("select pgflight.purge_finished(0)"))

        def reopen_it(
            step: int = step, barrier: threading.Barrier = barrier, results: dict[str, str | None] = results
        ) -> None:
            barrier.wait()
            results["reopen"] = _sqlstate(lambda: reopener.execute(f"select pgflight.{reopen}(%s)", [step]))

        threads = [threading.Thread(target=purge), threading.Thread(target=reopen_it)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert results["purge"] is None, results
        left = conn.execute("select count(*) from pgflight.steps where id = %s", [step]).fetchone()
        if results["reopen"] is None:
            assert left == (1,), results
            key = "reopened"
        else:
            assert results["reopen"] == "ZF003" and left == (0,), results
            key = "purged"
        outcomes[key] = outcomes.get(key, 0) + 1
    assert sum(outcomes.values()) == 80, outcomes
