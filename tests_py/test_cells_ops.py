"""
Operating cells (docs/scaling.md): each cell's own pg_cron sweeps, worker registration bounded per
login through the proxy, and the operator views (the inspector's reads and /metrics) across cells,
as real scram logins of the worker, operator and reader lanes. Three PostgreSQL servers, one cell
each, the proxy database on the first; pg_cron serves each cell's database. Skipped, saying why,
when PL/Proxy is not installed (scripts/setup installs it); the sweep test is skipped, saying why,
when pg_cron cannot be loaded in the test servers.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from cells_support import cell_rows as _cell_rows
from cells_support import cells_or_skip
from clients_support import CLIENTS_DIR, require
from inspector_browser import Served, page, serve  # noqa: F401  (fixtures)
from pgflight import cells
from worker_support import WorkerProc, wait_for

PASSWORD = "cells-ops-test-password"
WORKER = "pgf_ops_worker"
OPERATOR = "pgf_ops_operator"
READER = "pgf_ops_reader"
LOGINS = {WORKER: "pgflight_worker", OPERATOR: "pgflight_operator", READER: "pgflight_reader"}


@pytest.fixture(scope="module")
def cells3() -> Iterator[cells.LocalCells]:
    """Three cells behind a proxy, each cell's sweeps scheduled with its own pg_cron where it loads."""
    with cells_or_skip(3, logins=LOGINS, password=PASSWORD, cron=True) as lc:
        yield lc


def _as(lc: cells.LocalCells, login: str) -> str:
    return lc.as_login(login, PASSWORD)


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
        before = su.execute(
            "select count(*) from pgflight_cells.workers where login = %s", [WORKER]
        ).fetchone()
        assert before is not None
        cap = before[0] + 3  # the workers the login registered in earlier tests, and three more
        su.execute("update pgflight_cells.settings set max_live_workers_per_login = %s", [cap])
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
                detail = e.value.diag.message_detail
                assert detail and f"max_live_workers_per_login = {cap} (proxy)" in detail
                assert e.value.diag.message_hint and "deregister_worker" in e.value.diag.message_hint
            with psycopg.connect(cells3.proxy_dsn, autocommit=True) as su:
                assert su.execute("select last_value from pgflight_cells.worker_ids").fetchone() == last, (
                    "a refused registration takes no id"
                )
                mine = su.execute(
                    "select count(*) from pgflight_cells.workers where login = %s", [WORKER]
                ).fetchone()
                assert mine == (cap,)
            # a register/deregister loop: the login's rows stay at the cap
            for _ in range(10):
                w.execute("select pgflight.deregister_worker(%s)", [ids.pop(0)])
                ids.append(w.execute("select pgflight.register_worker('again')").fetchone()[0])  # type: ignore[index]
            with psycopg.connect(cells3.proxy_dsn, autocommit=True) as su:
                mine = su.execute(
                    "select count(*) from pgflight_cells.workers where login = %s", [WORKER]
                ).fetchone()
                assert mine == (cap,)
            for i in ids:
                w.execute("select pgflight.deregister_worker(%s)", [i])
    finally:
        with psycopg.connect(cells3.proxy_dsn, autocommit=True) as su:
            su.execute("update pgflight_cells.settings set max_live_workers_per_login = 1000")


# --- the operator's views across cells ------------------------------------------------------------

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _metrics(url: str) -> Samples:
    with urllib.request.urlopen(url + "/metrics", timeout=20) as r:
        text = r.read().decode()
    out: Samples = {}
    for fam in text_string_to_metric_families(text):
        for smp in fam.samples:
            out[(smp.name, tuple(sorted(smp.labels.items())))] = smp.value
    return out


def _summed(lc: cells.LocalCells, query: str) -> int:
    return sum(int(_cell_rows(d, query)[0][0]) for d in lc.cell_dsns)


@pytest.fixture(scope="module")
def viewed(cells3: cells.LocalCells) -> dict[str, Any]:
    """
    In each cell n, workspace viewN with three runs of recipe 'viewed': one succeeded, one
    dead-lettered, one queued; every step claimed by one worker registered through the proxy.
    """
    runs: dict[int, list[int]] = {}
    for n in (1, 2, 3):
        _workspace(cells3, f"view{n}", n)
    with psycopg.connect(_as(cells3, OPERATOR), autocommit=True) as op:
        for n in (1, 2, 3):
            runs[n] = [
                op.execute(
                    "select run_id from pgflight.submit_run(%s, 'viewed', '{}', '{\"max_attempts\": 1}')",
                    [f"view{n}"],
                ).fetchone()[0]  # type: ignore[index]
                for _ in range(3)
            ]
    with psycopg.connect(_as(cells3, WORKER), autocommit=True) as w:
        wid = w.execute("select pgflight.register_worker('viewer')").fetchone()[0]  # type: ignore[index]
        held: dict[int, tuple[int, int]] = {}
        deadline = time.monotonic() + 30
        while len(held) < 9 and time.monotonic() < deadline:
            for a, t, r in w.execute(
                "select attempt_id, fencing_token, run_id"
                " from pgflight.claim_batch(%s, 10, 300, array['viewed'])",
                [wid],
            ).fetchall():
                held[r] = (a, t)
            time.sleep(0.1)
        assert len(held) == 9, held
        for n in (1, 2, 3):
            w.execute("select pgflight.complete_step(%s, %s, '{}')", list(held[runs[n][0]]))
            w.execute('select pgflight.fail_step(%s, %s, \'{"m": "no"}\')', list(held[runs[n][1]]))
            # the third stays leased to the worker
    return {"runs": runs, "worker": wid}


@pytest.mark.parametrize("login", [OPERATOR, READER])
def test_the_inspector_through_the_proxy_shows_every_cells_runs_in_one_order(
    cells3: cells.LocalCells, viewed: dict[str, Any], serve: Any, page: Any, login: str
) -> None:
    """
    The inspector pointed at the proxy, as the operator and as the reader (scram), in Chromium:
    the runs page lists the runs of all three cells newest first as one database would (a page
    merged across cells, not cell after cell), a cell-3 run opens with its step, the dead letters
    of every cell are listed, the worker registered in every cell is listed once.
    """
    served: Served = serve(_as(cells3, login))
    lane = "operator" if login == OPERATOR else "reader"
    response = page.goto(served.url + "/runs")
    assert response is not None and response.status == 200
    assert page.locator("#who").inner_text() == f"{login} · {lane} lane"
    listed = [int(r.locator("td").nth(0).inner_text()) for r in page.locator("table.runs tr").all()[1:]]
    mine = [r for rs in viewed["runs"].values() for r in rs]
    assert set(mine) <= set(listed)
    assert listed == sorted(listed, reverse=True), "newest first across the cells"
    assert {cells.cell_of(r) for r in listed} >= {1, 2, 3}
    cell3 = viewed["runs"][3][0]
    response = page.goto(served.url + f"/runs/{cell3}")
    assert response is not None and response.status == 200
    assert str(cell3) in page.locator("main").inner_text()
    page.goto(served.url + "/dead-letters")
    dead = page.locator("main").inner_text()
    for n in (1, 2, 3):
        assert f"view{n}" in dead, f"cell {n}'s dead letter is listed"
    page.goto(served.url + "/workers")
    assert page.locator("main").inner_text().count("viewer") == 1, "one worker, listed once"
    page.goto(served.url + "/queues")
    queues = page.locator("main").inner_text()
    assert all(f"view{n}" in queues for n in (1, 2, 3))


@pytest.mark.parametrize("login", [OPERATOR, READER])
def test_metrics_through_the_proxy_sum_the_cells_and_label_what_cannot_be_summed(
    cells3: cells.LocalCells, viewed: dict[str, Any], serve: Any, login: str
) -> None:
    """
    /metrics of the inspector pointed at the proxy: counts and counters are the sums over the cells
    (checked against each cell's own rows), ages, lags and server health carry a `cell` label, and
    each cell's events cursor is its own: a second scrape counts nothing twice, a new completion in
    the retried dead letter's cell adds one.
    """
    served: Served = serve(_as(cells3, login))
    m = _metrics(served.url)
    for n in (1, 2, 3):
        assert m[("pgflight_cell_up", (("cell", str(n)),))] == 1
        assert ("pgflight_sweep_lag_seconds", (("cell", str(n)),)) in m
        assert ("pgflight_notification_queue_usage", (("cell", str(n)),)) in m
        assert m[("pgflight_queue_ready", (("recipe", "viewed"), ("workspace", f"view{n}")))] == 0
        assert m[("pgflight_in_flight", (("recipe", "viewed"), ("workspace", f"view{n}")))] == 1
    completions = _summed(cells3, "select count(*) from pgflight.run_events where to_status = 'succeeded'")
    claims = _summed(cells3, "select count(*) from pgflight.run_events where reason = 'claimed'")
    dead = _summed(cells3, "select count(*) from pgflight.dead_letters")
    assert m[("pgflight_completions_total", ())] == completions
    assert m[("pgflight_claims_total", ())] == claims
    lettered = _summed(cells3, "select count(*) from pgflight.run_events where to_status = 'dead_letter'")
    assert m[("pgflight_dead_letters", ())] == dead >= 2
    assert m[("pgflight_dead_lettered_total", ())] == lettered >= 3
    again = _metrics(served.url)
    assert again[("pgflight_completions_total", ())] == completions, "nothing counted twice"
    with psycopg.connect(_as(cells3, OPERATOR), autocommit=True) as op:
        run = op.execute(
            "select run_id, pgflight.retry_step(step_id) from pgflight.dead_letters"
            " where recipe = 'viewed' order by run_id limit 1"
        ).fetchone()
        assert run is not None
    with psycopg.connect(_as(cells3, WORKER), autocommit=True) as w:
        (a, t) = w.execute(
            "select attempt_id, fencing_token from pgflight.claim_batch(%s, 1, 60, array['viewed'])",
            [viewed["worker"]],
        ).fetchone()  # type: ignore[misc]
        assert cells.cell_of(a) == cells.cell_of(run[0])
        w.execute("select pgflight.complete_step(%s, %s, '{}')", [a, t])
    third = _metrics(served.url)
    assert third[("pgflight_completions_total", ())] == completions + 1
    where = (("recipe", "viewed"), ("workspace", f"view{cells.cell_of(run[0])}"))
    assert third[("pgflight_queue_ready", where)] == 0


# --- the TypeScript worker through the proxy ------------------------------------------------------


def _ts_worker(lc: cells.LocalCells, tmp: Path, n: int) -> WorkerProc:
    """The TypeScript library's conformance worker, connected to the proxy as the worker login."""
    log = tmp / f"ts-worker-{n}.log"
    args = ["--lease", "3", "--poll", "0.2", "--concurrency", "4", "--grace", "2"]
    env = dict(os.environ, PGFLIGHT_DSN=_as(lc, WORKER))
    env.pop("PGFLIGHT_LISTEN_DSN", None)
    with open(log, "wb") as f:
        proc = subprocess.Popen(
            [str(CLIENTS_DIR / "typescript" / "worker"), *args],
            stdout=f,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    return WorkerProc(proc, log)


def test_the_typescript_worker_drains_three_cells_through_the_proxy_exactly_once(
    cells3: cells.LocalCells, tmp_path: Path
) -> None:
    """
    Two TypeScript workers (clients/typescript) against the proxy, 3 cells x 40 noop steps, one
    worker SIGKILLed mid-run: every step ends with exactly one succeeded attempt carrying its own
    result, in its own cell; the ids the library read (above 2^44, below 2^53) are exact.
    """
    require("typescript")
    per_cell = 40
    for n in (1, 2, 3):
        _workspace(cells3, f"ts{n}", n)
    started: list[WorkerProc] = []
    try:
        for i in range(2):
            started.append(_ts_worker(cells3, tmp_path, i))
        for w in started:
            wait_for(
                lambda w=w: (
                    w.proc.poll() is not None
                    or _cell_rows(
                        cells3.cell_dsns[0], "select 1 from pgflight.workers where pid = %s", [w.pid]
                    )
                ),
                30,
                "the TypeScript worker to register through the proxy",
                interval_s=0.2,
            )
            assert w.proc.poll() is None, w.output()[-3000:]
        with psycopg.connect(_as(cells3, OPERATOR), autocommit=True) as op:
            for n in (1, 2, 3):
                op.execute(
                    "select count(*) from pgflight.submit_runs(%s, (select jsonb_agg(jsonb_build_object("
                    "'recipe', 'noop', 'input', jsonb_build_object('n', i))) from generate_series(1, %s) i))",
                    [f"ts{n}", per_cell],
                )

        def done(n: int) -> int:
            return int(
                _cell_rows(
                    cells3.cell_dsns[n - 1],
                    "select count(*) from pgflight.runs r join pgflight.workspaces w on w.id = r.workspace_id"
                    " where w.name = %s and r.status = 'succeeded'",
                    [f"ts{n}"],
                )[0][0]
            )

        wait_for(lambda: sum(done(n) for n in (1, 2, 3)) >= 20, 60, "twenty steps done", interval_s=0.2)
        started[0].kill()
        logs = lambda: "\n".join(w.output()[-2000:] for w in started)  # noqa: E731
        wait_for(
            lambda: all(done(n) == per_cell for n in (1, 2, 3)),
            120,
            "every cell's steps to succeed through the proxy",
            interval_s=0.5,
        )
    finally:
        for w in started:
            w.kill()
    for n, dsn in enumerate(cells3.cell_dsns, 1):
        rows = _cell_rows(
            dsn,
            "select s.id, (s.input->>'n')::int, count(*) filter (where a.status = 'succeeded'),"
            " (array_agg(a.result) filter (where a.status = 'succeeded'))[1],"
            " (select count(*) from pgflight.run_events e where e.step_id = s.id and e.reason = 'succeeded')"
            " from pgflight.steps s join pgflight.runs r on r.id = s.run_id"
            " join pgflight.workspaces w on w.id = r.workspace_id"
            " join pgflight.step_attempts a on a.step_id = s.id where w.name = %s group by s.id",
            [f"ts{n}"],
        )
        assert len(rows) == per_cell
        assert all(r[2] == 1 and r[4] == 1 for r in rows), (
            f"cell {n}: a step succeeded twice or never\n{logs()}"
        )
        assert all(r[3] == {"n": r[1]} for r in rows), f"cell {n}: a result is not its step's"
        assert all(cells.cell_of(r[0]) == n for r in rows)


# --- the command line (last: it rewrites the proxy) ------------------------------------------------


def test_cells_deploy_on_the_command_line_says_per_cell_how_its_sweeps_run(cells3: cells.LocalCells) -> None:
    """
    `pgflight cells deploy` again over numbered cells (as after a migration): one line per cell
    saying its sweeps are scheduled with its pg_cron (or why not), the jobs not duplicated, and
    the logins' user mappings kept (they were dropped with the cells' server before).
    """
    args = [arg for d in cells3.cell_dsns for arg in ("--cell", d)]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pgflight.cli",
            "cells",
            "deploy",
            "--no-migrate",
            "--no-wait-sweep",
            *args,
            "--proxy",
            cells3.proxy_dsn,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for n in (1, 2, 3):
        if cells3.cron.get(n) is None:
            assert f"cell {n}: sweeps scheduled with pg_cron" in done.stdout, done.stdout
        else:
            assert f"cell {n}: sweeps not scheduled" in done.stdout, done.stdout
        if set(cells3.cron.values()) == {None}:
            jobs = _cell_rows(cells3.cell_dsns[n - 1], "select jobname, count(*) from cron.job group by 1")
            assert all(count == 1 for _, count in jobs), jobs
    # the logins' user mappings survive the proxy's rewrite: they still reach the cells
    with psycopg.connect(_as(cells3, OPERATOR), autocommit=True) as op:
        listed = op.execute("select count(*) from pgflight.run_list_page(null, 500)").fetchone()
        assert listed is not None and listed[0] > 0
    with psycopg.connect(cells3.proxy_dsn, autocommit=True) as su:
        cap = su.execute("select max_live_workers_per_login from pgflight_cells.settings").fetchone()
        assert cap == (1000,)
