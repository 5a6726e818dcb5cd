"""
Operating cells (docs/scaling.md): each cell's own pg_cron sweeps, worker registration bounded per
login through the proxy, and the operator views (the inspector's reads and /metrics) across cells,
as real scram logins of the worker, operator and reader lanes. Three PostgreSQL servers, one cell
each, the proxy database on the first; pg_cron serves each cell's database. Skipped, saying why,
when PL/Proxy is not installed (scripts/setup installs it); the sweep test is skipped, saying why,
when pg_cron cannot be loaded in the test servers.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from pgflight import cells
from worker_support import wait_for

SETTINGS = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "log_min_messages": "warning",
}
PASSWORD = "cells-ops-test-password"
WORKER = "pgf_ops_worker"
OPERATOR = "pgf_ops_operator"
READER = "pgf_ops_reader"
LOGINS = {WORKER: "pgflight_worker", OPERATOR: "pgflight_operator", READER: "pgflight_reader"}


@pytest.fixture(scope="module")
def cells3() -> Iterator[cells.LocalCells]:
    """Three cells behind a proxy, each cell's sweeps scheduled with its own pg_cron where it loads."""
    try:
        with cells.local_cells(3, logins=LOGINS, password=PASSWORD, settings=SETTINGS, cron=True) as lc:
            yield lc
    except cells.CellsError as e:
        if "PL/Proxy is not installed" not in str(e):
            raise
        pytest.skip(str(e))


def _as(lc: cells.LocalCells, login: str) -> str:
    return lc.as_login(login, PASSWORD)


def _cell_rows(dsn: str, query: str, params: Any = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as c:
        return c.execute(query, params).fetchall()


def _workspace(lc: cells.LocalCells, name: str, cell: int) -> None:
    cells.place(lc.proxy_dsn, name, cell)
    with psycopg.connect(_as(lc, OPERATOR), autocommit=True) as op:
        op.execute("select pgflight.create_workspace(%s)", [name])


# --- each cell sweeps itself ------------------------------------------------------------------


def test_deploy_schedules_each_cells_sweeps_and_a_lapsed_lease_is_reclaimed_by_its_cells_own_cron(
    cells3: cells.LocalCells,
) -> None:
    """
    `pgflight cells deploy` installs pgflight-sweeps in every cell (the schedule that fits the
    cell's pg_cron: minutes on 1.4, seconds on >= 1.5). A worker claims a step of cell 2 through the
    proxy with a 1 s lease and vanishes; nothing calls the proxy or the cell again, and cell 2's own
    pg_cron job reclaims the lease (an attempt queued again).
    """
    if set(cells3.cron.values()) != {None}:
        pytest.skip(f"pg_cron cannot run in the test servers' cells: {cells3.cron}")
    for n, dsn in enumerate(cells3.cell_dsns, 1):
        jobs = _cell_rows(
            dsn,
            "select jobname, schedule, command, username from cron.job"
            " where database = current_database() order by jobname",
        )
        names = {j[0] for j in jobs}
        assert {"pgflight-sweeps", "pgflight-cron-history"} <= names, (n, jobs)
        sweep = next(j for j in jobs if j[0] == "pgflight-sweeps")
        assert sweep[3] == "pgflight_cron", "a cell's sweeps run as pgflight_cron, not a superuser"
        assert sweep[1] in ("* * * * *", "5 seconds") and "sweep_loop" in sweep[2], sweep
    _workspace(cells3, "swept2", 2)
    with psycopg.connect(_as(cells3, OPERATOR), autocommit=True) as op:
        op.execute("select * from pgflight.submit_run('swept2', 'swept', '{}', '{\"max_attempts\": 3}')")
    with psycopg.connect(_as(cells3, WORKER), autocommit=True) as w:
        wid = w.execute("select pgflight.register_worker('vanishing')").fetchone()[0]  # type: ignore[index]
        (attempt,) = w.execute(
            "select attempt_id from pgflight.claim_batch(%s, 1, 1, array['swept'])", [wid]
        ).fetchone()  # type: ignore[misc]
    assert cells.cell_of(attempt) == 2
    cell2 = cells3.cell_dsns[1]
    since = _cell_rows(cell2, "select now()")[0][0]

    # pg_cron 1.4 starts the minute job at the next minute boundary, then sweeps every 5 s
    def reclaimed() -> bool:
        rows = _cell_rows(cell2, "select status from pgflight.attempts where attempt_id = %s", [attempt])
        return rows == [("lease_expired",)]

    t0 = time.monotonic()
    wait_for(reclaimed, 90, "cell 2's own pg_cron sweep to reclaim the lapsed lease", interval_s=0.5)
    print(f"\ncell 2's lapsed lease reclaimed by its own cron after {time.monotonic() - t0:.1f} s")
    queued = _cell_rows(
        cell2,
        "select count(*) from pgflight.attempts a join pgflight.attempts b using (step_id)"
        " where a.attempt_id = %s and b.status = 'queued'",
        [attempt],
    )
    assert queued == [(1,)], "the step is queued again in its cell"
    ran = _cell_rows(
        cell2,
        "select count(*) from cron.job_run_details d join cron.job j using (jobid)"
        " where j.jobname = 'pgflight-sweeps' and d.start_time >= %s - interval '70 seconds'",
        [since],
    )
    assert ran[0][0] >= 1, "cell 2's pg_cron ran its sweep job"


# --- worker registration through the proxy ------------------------------------------------------


def test_a_worker_id_from_the_proxy_is_valid_in_every_cell_and_a_looping_login_is_capped(
    cells3: cells.LocalCells,
) -> None:
    """
    register_worker through the proxy gives one id, registered under it in every cell. A login
    that registers without end meets the proxy's cap (max_live_workers_per_login, taken from cell 1
    at deploy): ZF005 with DETAIL and HINT, no id taken and no row written by the refused call; a
    deregistered worker frees its place, so a register/deregister loop keeps at most the cap's rows.
    """
    with psycopg.connect(cells3.proxy_dsn, autocommit=True) as su:
        cap0 = su.execute("select max_live_workers_per_login from pgflight_cells.settings").fetchone()
        assert cap0 is not None and cap0[0] == 1000, "the proxy takes cell 1's cap at deploy"
        su.execute("update pgflight_cells.settings set max_live_workers_per_login = 3")
    try:
        with psycopg.connect(_as(cells3, WORKER), autocommit=True) as w:
            ids = [
                w.execute("select pgflight.register_worker(%s)", [f"loop{i}"]).fetchone()[0]  # type: ignore[index]
                for i in range(3)
            ]
            for dsn in cells3.cell_dsns:
                rows = _cell_rows(dsn, "select id, login from pgflight.workers where id = any (%s)", [ids])
                assert sorted(rows) == sorted((i, WORKER) for i in ids), "one id valid in every cell"
            with psycopg.connect(cells3.proxy_dsn, autocommit=True) as su:
                last = su.execute("select last_value from pgflight_cells.worker_ids").fetchone()
            for _ in range(5):
                with pytest.raises(psycopg.Error) as e:
                    w.execute("select pgflight.register_worker('one too many')")
                assert e.value.sqlstate == "ZF005"
                assert (
                    e.value.diag.message_detail
                    and "max_live_workers_per_login = 3" in e.value.diag.message_detail
                )
                assert e.value.diag.message_hint and "deregister_worker" in e.value.diag.message_hint
            with psycopg.connect(cells3.proxy_dsn, autocommit=True) as su:
                assert su.execute("select last_value from pgflight_cells.worker_ids").fetchone() == last, (
                    "a refused registration takes no id"
                )
                mine = su.execute(
                    "select count(*) from pgflight_cells.workers where login = %s", [WORKER]
                ).fetchone()
                assert mine == (3,)
            # a register/deregister loop: the login's rows stay at the cap
            for _ in range(10):
                w.execute("select pgflight.deregister_worker(%s)", [ids.pop(0)])
                ids.append(w.execute("select pgflight.register_worker('again')").fetchone()[0])  # type: ignore[index]
            with psycopg.connect(cells3.proxy_dsn, autocommit=True) as su:
                mine = su.execute(
                    "select count(*) from pgflight_cells.workers where login = %s", [WORKER]
                ).fetchone()
                assert mine == (3,)
            for i in ids:
                w.execute("select pgflight.deregister_worker(%s)", [i])
    finally:
        with psycopg.connect(cells3.proxy_dsn, autocommit=True) as su:
            su.execute("update pgflight_cells.settings set max_live_workers_per_login = 1000")
