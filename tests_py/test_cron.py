"""
The sweeps under a real pg_cron (invariant 4 of docs/state_machine.md).

The test cluster preloads pg_cron with `cron.database_name = 'pgflight'`, so pgflight is deployed
into that database here (the `cron_extension` change creates the extension) and the schedules
are installed for real. On Debian 12 that is pg_cron 1.4, which schedules by the minute only: the
sweep job then CALLs `sweep_loop`, which sweeps, commits and sleeps for just under a minute.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import psycopg
import pytest

from pgflight import migrate

CRON_DB = "pgflight"
# Every test of the cron database in one xdist group (scripts/test runs --dist loadgroup): they
# install and remove the one database's jobs, and a test on another process that removed them
# mid-way made c06's confirmation find no job (CI, 2026-12-01).
pytestmark = pytest.mark.xdist_group("cron")
JOBS = "select jobid, jobname, schedule, command from cron.job order by jobname"


@pytest.fixture(scope="module")
def cron_dsn(server) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """The cron database with pgflight deployed; the schedules are removed afterwards."""
    dsn = server.dsn_for(CRON_DB)
    with psycopg.connect(dsn, autocommit=True) as c:
        if c.execute("select 1 from pg_available_extensions where name = 'pg_cron'").fetchone() is None:
            pytest.skip("pg_cron is not installed on this server")
    migrate.deploy(dsn)
    yield dsn
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select pgflight.uninstall_schedules()")


def _cron_version(c: psycopg.Connection) -> tuple[int, int]:
    row = c.execute("select extversion from pg_extension where extname = 'pg_cron'").fetchone()
    assert row is not None, "the cron_extension change should have created pg_cron here"
    major, minor = row[0].split("-")[0].split(".")[:2]
    return int(major), int(minor)


def _expired_step(c: psycopg.Connection, recipe: str) -> int:
    """Submit a step, claim it with a 1 s lease and abandon it, as a killed worker would."""
    c.execute("select pgflight.create_workspace('cron')")
    c.execute("select * from pgflight.submit_run('cron', %s, '{}', '{\"max_attempts\": 3}')", [recipe])
    worker = c.execute("select pgflight.register_worker('doomed')").fetchone()
    assert worker is not None
    got = c.execute(
        "select attempt_id from pgflight.claim_batch(%s, 1, 1, array[%s])", [worker[0], recipe]
    ).fetchall()
    assert len(got) == 1
    return int(got[0][0])


def _wait_reclaimed(c: psycopg.Connection, attempt_id: int, timeout_s: float) -> float:
    """Seconds until the attempt is lease_expired (claim_batch is never called meanwhile)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        row = c.execute("select status from pgflight.attempts where attempt_id = %s", [attempt_id]).fetchone()
        if row is not None and row[0] == "lease_expired":
            return time.monotonic() - t0
        time.sleep(0.2)
    pytest.fail(f"attempt {attempt_id} was not reclaimed within {timeout_s} s")


def test_install_schedules_is_idempotent_and_fits_the_cron_version(cron_dsn: str) -> None:
    with psycopg.connect(cron_dsn, autocommit=True) as c:
        first = c.execute("select * from pgflight.install_schedules()").fetchall()
        jobs1 = c.execute(JOBS).fetchall()
        second = c.execute("select * from pgflight.install_schedules()").fetchall()
        jobs2 = c.execute(JOBS).fetchall()
        assert first == second
        assert jobs1 == jobs2, "installing twice must change nothing"
        names = {j[1] for j in jobs2}
        assert {"pgflight-sweeps", "pgflight-cron-history"} <= names
        assert "pgflight-purge" not in names, "retention runs in the sweep loop, not hourly"
        sweeps = next(j for j in jobs2 if j[1] == "pgflight-sweeps")
        if _cron_version(c) >= (1, 5):
            assert sweeps[2] == "5 seconds" and "sweep_loop(5, 5)" in sweeps[3]
        else:  # a loop as long as the minute: no gap at the boundary
            assert sweeps[2] == "* * * * *" and "sweep_loop(60, 5)" in sweeps[3]
        history = next(j for j in jobs2 if j[1] == "pgflight-cron-history")
        assert "cron.job_run_details" in history[3], "the job history must be purged, or it grows forever"


def test_sweep_loop_commits_each_pass(cron_dsn: str) -> None:
    """Invariant 4 on pg_cron 1.4: the loop's passes are visible while it still runs."""
    with psycopg.connect(cron_dsn, autocommit=True) as c, psycopg.connect(cron_dsn, autocommit=True) as loop:
        attempt = _expired_step(c, "loop-victim")
        loop.execute("set statement_timeout = '20s'")
        t = threading.Thread(target=loop.execute, args=("call pgflight.sweep_loop(6, 0.5)",))
        t.start()
        try:
            took = _wait_reclaimed(c, attempt, timeout_s=5)
            assert t.is_alive(), "the reclaim must be committed by a pass, not only at the loop's end"
        finally:
            t.join(timeout=15)
        assert took < 3.5  # lease 1 s + one pass of 0.5 s, with slack for a loaded machine


@pytest.mark.slow
def test_c06_dead_worker_step_requeued_by_pg_cron_alone(cron_dsn: str) -> None:
    """Invariant 4 with the installed schedule: nothing but pg_cron runs the sweep."""
    with psycopg.connect(cron_dsn, autocommit=True) as c:
        installed_at = c.execute("select now()").fetchone()[0]  # type: ignore[index]
        c.execute("select pgflight.install_schedules(1)")
        attempt = _expired_step(c, "cron-victim")
        # pg_cron 1.4 starts the minute job at the next minute boundary; then every second
        _wait_reclaimed(c, attempt, timeout_s=75)
        row = c.execute(
            "select count(*) from pgflight.attempts a join pgflight.attempts b using (step_id)"
            " where a.attempt_id = %s and b.status = 'queued'",
            [attempt],
        ).fetchone()
        assert row is not None and row[0] == 1, "a new attempt is queued for the dead worker's step"
        ran = c.execute(
            "select count(*) from cron.job_run_details d join cron.job j using (jobid)"
            " where j.jobname = 'pgflight-sweeps'"
        ).fetchone()
        assert ran is not None and ran[0] >= 1
        # what `pgflight migrate` reports: the sweep ran, as pgflight_cron, not as a superuser
        ok, how = migrate.confirm_sweep(cron_dsn, timeout_s=5, since=installed_at)
        assert ok and "pgflight_cron" in how, how
