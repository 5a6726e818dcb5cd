"""
Cells behind PL/Proxy (docs/scaling.md): three PostgreSQL servers on their own ports, one cell
each, and the proxy database on the first, as real scram logins. The unchanged `pgflight worker`
runs against the proxy. Skipped, saying why, when PL/Proxy is not installed (scripts/setup
installs it).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgflight import cells
from worker_support import WorkerProc, start_worker, sweeping, wait_for

SETTINGS = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "log_min_messages": "warning",
}
PASSWORD = "cells-test-password"
WORKER = "pgf_cells_worker"
OPERATOR = "pgf_cells_operator"
LOGINS = {WORKER: "pgflight_worker", OPERATOR: "pgflight_operator"}
PROXY_DB = "pgflight_proxy"


@pytest.fixture(scope="module")
def cluster3() -> Iterator[cells.LocalCells]:
    try:
        with cells.local_cells(3, logins=LOGINS, password=PASSWORD, settings=SETTINGS) as lc:
            for d in lc.cell_dsns:
                with psycopg.connect(d, autocommit=True) as c:
                    c.execute("update pgflight.settings set allow_fake_clock = true")
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


def test_the_proxy_offers_every_api_function_of_a_cell_with_its_signature_and_grants(
    cluster3: cells.LocalCells,
) -> None:
    with psycopg.connect(cluster3.cell_dsns[1]) as c:
        cell = {(f.name, f.identity, f.result, f.lanes) for f in cells.catalogue(c)}
    with psycopg.connect(cluster3.proxy_dsn) as c:
        proxy = {(f.name, f.identity, f.result, f.lanes) for f in cells.catalogue(c)}
        extra = c.execute(
            "select count(*) from pg_proc where pronamespace = 'pgflight'::regnamespace"
        ).fetchone()
    assert proxy == cell
    with psycopg.connect(cluster3.cell_dsns[1]) as c:
        cell_views = cells.views(c)
    with psycopg.connect(cluster3.proxy_dsn) as c:
        assert cells.views(c) == cell_views, "every view a lane reads, same columns and grants"
    assert extra is not None and extra[0] == len(cell), "the proxy's pgflight schema holds nothing else"
    assert len(cell) > 80


def test_every_id_and_token_names_its_cell_and_tokens_increase_within_it(cluster3: cells.LocalCells) -> None:
    with psycopg.connect(_as(cluster3, OPERATOR), autocommit=True) as op:
        for n in (1, 2, 3):
            cells.place(cluster3.proxy_dsn, f"ids{n}", n)
            op.execute("select pgflight.create_workspace(%s)", [f"ids{n}"])
            for _ in range(3):
                op.execute("select * from pgflight.submit_run(%s, 'noop', '{}')", [f"ids{n}"])
    with psycopg.connect(_as(cluster3, WORKER), autocommit=True) as w:
        wid = w.execute("select pgflight.register_worker('ids')").fetchone()[0]  # type: ignore[index]
        assert cells.cell_of(wid) == 0, "a proxy's worker id is below every cell's range"
        rows = w.execute(
            "select attempt_id, fencing_token, step_id, run_id from pgflight.claim_batch(%s, 100, 30)", [wid]
        ).fetchall()
        w.execute("select pgflight.deregister_worker(%s)", [wid])
    ids3 = [r for r in rows if cells.cell_of(r[0]) == 3]
    assert len(ids3) >= 3
    for r in rows:
        assert {cells.cell_of(x) for x in r} == {cells.cell_of(r[0])}
    for n in (1, 2, 3):
        toks = [r[1] for r in rows if cells.cell_of(r[0]) == n]
        # tokens in claim order within a cell: each claim's token is above every earlier one
        assert toks == sorted(toks) and len(set(toks)) == len(toks)
        lo, hi = cells.cell_range(n)
        assert all(lo <= t <= hi for t in toks)


def test_a_stale_token_is_refused_and_batches_mixing_cells_are_answered_per_element(
    cluster3: cells.LocalCells,
) -> None:
    with psycopg.connect(_as(cluster3, OPERATOR), autocommit=True) as op:
        for n in (1, 2):
            cells.place(cluster3.proxy_dsn, f"mix{n}", n)
            op.execute("select pgflight.create_workspace(%s)", [f"mix{n}"])
            op.execute("select * from pgflight.submit_run(%s, 'mixrecipe', '{}')", [f"mix{n}"])
    with psycopg.connect(_as(cluster3, WORKER), autocommit=True) as w:
        wid = w.execute("select pgflight.register_worker('mix')").fetchone()[0]  # type: ignore[index]
        rows = w.execute(
            "select attempt_id, fencing_token from pgflight.claim_batch(%s, 10, 30, array['mixrecipe'])",
            [wid],
        ).fetchall()
        assert sorted(cells.cell_of(a) for a, _ in rows) == [1, 2]
        (a1, t1), (a2, t2) = sorted(rows, key=lambda r: cells.cell_of(r[0]))
        beats = w.execute(
            "select attempt_id, status from pgflight.heartbeat(%s, %s, %s)", [wid, [a1, a2], [t1, t2 - 1]]
        ).fetchall()
        assert dict(beats) == {a1: "held", a2: "lease_lost"}
        # the stale token of cell 2's attempt is refused; cell 1's completes
        done = w.execute(
            "select attempt_id, outcome from pgflight.complete_batch(%s, %s, %s::jsonb[])",
            [[a2, a1], [t2 - 1, t1], ['{"r": 2}', '{"r": 1}']],
        ).fetchall()
        assert dict(done) == {a1: "succeeded", a2: "lease_lost"}
        with pytest.raises(psycopg.Error) as e:
            w.execute("select pgflight.complete_step(%s, %s, '{}')", [a2, t2 - 1])
        assert e.value.sqlstate == "ZF001"
        w.execute("select pgflight.complete_step(%s, %s, '{}')", [a2, t2])
        # the proxy's own tables name other tenants' workspaces and workers: no login reads them
        for table in ("pgflight_cells.workspaces", "pgflight_cells.workers"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                w.execute(f"select * from {table}")
        w.execute("select pgflight.deregister_worker(%s)", [wid])


def test_a_batch_naming_a_cell_that_is_down_answers_its_elements_lost_and_the_others_as_usual(
    cluster3: cells.LocalCells,
) -> None:
    with psycopg.connect(_as(cluster3, OPERATOR), autocommit=True) as op:
        for n in (1, 3):
            cells.place(cluster3.proxy_dsn, f"down{n}", n)
            op.execute("select pgflight.create_workspace(%s)", [f"down{n}"])
            op.execute("select * from pgflight.submit_run(%s, 'downrecipe', '{}')", [f"down{n}"])
    with psycopg.connect(_as(cluster3, WORKER), autocommit=True) as w:
        wid = w.execute("select pgflight.register_worker('down')").fetchone()[0]  # type: ignore[index]
        rows = w.execute(
            "select attempt_id, fencing_token from pgflight.claim_batch(%s, 10, 60, array['downrecipe'])",
            [wid],
        ).fetchall()
        (a1, t1), (a3, t3) = sorted(rows, key=lambda r: cells.cell_of(r[0]))
        assert (cells.cell_of(a1), cells.cell_of(a3)) == (1, 3)
        cluster3.clusters[2].stop("immediate")
        try:
            beats = w.execute(
                "select attempt_id, status from pgflight.heartbeat(%s, %s, %s)", [wid, [a3, a1], [t3, t1]]
            ).fetchall()
            assert dict(beats) == {a1: "held", a3: "lease_lost"}
            done = w.execute(
                "select attempt_id, outcome from pgflight.complete_batch(%s, %s, %s::jsonb[])",
                [[a3, a1], [t3, t1], ["{}", "{}"]],
            ).fetchall()
            assert dict(done) == {a1: "succeeded", a3: "lease_lost"}
        finally:
            cluster3.clusters[2].start()
        w.execute("select pgflight.deregister_worker(%s)", [wid])
    # nothing was completed in cell 3 (the claim itself may be gone: the test servers run with
    # synchronous_commit off, and an immediate stop loses the last commits)
    wait_for(lambda: _cell_rows(cluster3.cell_dsns[2], "select 1"), 30, "cell 3 to be back")
    ended = _cell_rows(
        cluster3.cell_dsns[2],
        "select count(*) from pgflight.step_attempts a join pgflight.step_attempts b on b.step_id = a.step_id"
        " where a.id = %s and b.status = 'succeeded'",
        [a3],
    )
    assert ended == [(0,)]


def _held_by(dsns: list[str], pid: int) -> list[tuple[str, int]]:
    """(cell dsn, attempt id) of each attempt a worker process holds, in every cell."""
    q = (
        "select a.id from pgflight.step_attempts a join pgflight.workers w on w.id = a.worker_id"
        " where w.pid = %s and a.status in ('claimed', 'running')"
    )
    return [(d, r[0]) for d in dsns for r in _cell_rows(d, q, [pid])]


def _done(dsn: str, workspaces: list[str]) -> int:
    with contextlib.suppress(psycopg.Error):
        rows = _cell_rows(
            dsn,
            "select count(*) from pgflight.runs r join pgflight.workspaces w on w.id = r.workspace_id"
            " where w.name = any (%s) and r.status = 'succeeded'",
            [workspaces],
        )
        return int(rows[0][0])
    return -1


def test_workers_drain_every_cell_once_through_a_kill_and_a_cell_outage(
    cluster3: cells.LocalCells, tmp_path: Path
) -> None:
    per_ws = 20
    spaces = {n: [f"drain{n}a", f"drain{n}b"] for n in (1, 2, 3)}
    with psycopg.connect(_as(cluster3, OPERATOR), autocommit=True) as op:
        for n, names in spaces.items():
            for name in names:
                cells.place(cluster3.proxy_dsn, name, n)
                op.execute("select pgflight.create_workspace(%s)", [name])
                op.execute(
                    "select count(*) from pgflight.submit_runs(%s, (select jsonb_agg(jsonb_build_object("
                    "'recipe', 'sleep', 'input', jsonb_build_object('seconds', 0.3)))"
                    " from generate_series(1, %s)))",
                    [name, per_ws],
                )
    started: list[WorkerProc] = []

    def worker() -> WorkerProc:
        w = start_worker(_as(cluster3, WORKER), tmp_path, "--lease", "2", "--poll", "0.2")
        started.append(w)
        return w

    try:
        with sweeping(cluster3.cell_dsns, every_s=0.3):
            a, _b = worker(), worker()
            wait_for(
                lambda: (
                    sum(_done(d, spaces[n]) for n, d in zip((1, 2, 3), cluster3.cell_dsns, strict=True)) >= 10
                ),
                60,
                "ten runs done through the proxy",
            )
            a_held = wait_for(lambda: _held_by(cluster3.cell_dsns, a.pid), 30, "worker A to hold a lease")
            a.kill()  # SIGKILL mid-run: its leases lapse and are reclaimed in their cells
            assert a_held, "worker A held leases when it was killed"
            worker()
            wait_for(lambda: _done(cluster3.cell_dsns[2], spaces[3]) >= 5, 60, "cell 3 to make progress")
            cluster3.clusters[2].stop("immediate")
            assert _done(cluster3.cell_dsns[2], spaces[3]) == -1
            late = worker()  # registers with cell 3 down: registered there on its first claim after
            wait_for(
                lambda: _cell_rows(
                    cluster3.cell_dsns[0], "select id from pgflight.workers where pid = %s", [late.pid]
                ),
                30,
                "a worker to register through the proxy with cell 3 down",
            )
            before = [_done(d, spaces[n]) for n, d in zip((1, 2), cluster3.cell_dsns[:2], strict=True)]
            # cells 1 and 2 carry on while cell 3 is down
            wait_for(
                lambda: all(
                    _done(d, spaces[n]) == 2 * per_ws
                    for n, d in zip((1, 2), cluster3.cell_dsns[:2], strict=True)
                ),
                120,
                f"cells 1 and 2 to finish with cell 3 down (done before the outage: {before})",
            )
            cluster3.clusters[2].start()
            wait_for(lambda: _done(cluster3.cell_dsns[2], spaces[3]) == 2 * per_ws, 120, "cell 3 to finish")
            # the late worker, registered in cells 1 and 2 only, is registered in cell 3 by its first
            # claim there
            wait_for(
                lambda: _cell_rows(
                    cluster3.cell_dsns[2], "select id from pgflight.workers where pid = %s", [late.pid]
                ),
                30,
                "the worker registered during the outage to be registered in cell 3",
            )
    finally:
        for w in started:
            w.kill()
    ends = [
        _cell_rows(d, "select status from pgflight.step_attempts where id = %s", [i])[0][0] for d, i in a_held
    ]
    # one may have completed between the look and the kill; the rest lapsed and were reclaimed
    assert "lease_expired" in ends and set(ends) <= {"lease_expired", "succeeded"}, ends
    logs = "\n".join(w.output()[-2000:] for w in started)
    for n, d in zip((1, 2, 3), cluster3.cell_dsns, strict=True):
        once = _cell_rows(
            d,
            "select s.id, count(*) filter (where a.status = 'succeeded'),"
            " (select count(*) from pgflight.run_events e where e.step_id = s.id and e.reason = 'succeeded')"
            " from pgflight.steps s join pgflight.runs r on r.id = s.run_id"
            " join pgflight.workspaces w on w.id = r.workspace_id"
            " join pgflight.step_attempts a on a.step_id = s.id where w.name = any (%s) group by s.id",
            [spaces[n]],
        )
        assert len(once) == 2 * per_ws, logs
        assert {(r[1], r[2]) for r in once} == {(1, 1)}, f"cell {n}: a step succeeded twice or never\n{logs}"
        assert all(cells.cell_of(r[0]) == n for r in once)


def test_the_id_partitions_of_a_cell_start_at_its_ids_in_one_pass(cluster3: cells.LocalCells) -> None:
    lo, _ = cells.cell_range(2)
    with psycopg.connect(cluster3.cell_dsns[1], autocommit=True) as c:
        c.execute("select * from pgflight.maintain_partitions(1000)")
        for parent in ("traces", "streams"):
            ranges = c.execute(
                "select lo, hi from pgflight._id_partitions(%s) order by lo", [parent]
            ).fetchall()
            # one partition holds the cell's next ids; none was made for the empty ids below them
            assert any(a <= lo < b for a, b in ranges), (parent, ranges)
            assert all(b <= 100_000 or a >= lo - 100_000 for a, b in ranges), (parent, ranges)


def test_the_operator_views_of_the_command_line_see_every_cell_through_the_proxy(
    cluster3: cells.LocalCells,
) -> None:
    runs = {}
    with psycopg.connect(_as(cluster3, OPERATOR), autocommit=True) as op:
        for n in (1, 2, 3):
            cells.place(cluster3.proxy_dsn, f"view{n}", n)
            op.execute("select pgflight.create_workspace(%s)", [f"view{n}"])
            row = op.execute(
                "select run_id from pgflight.submit_run(%s, 'viewed', '{}')", [f"view{n}"]
            ).fetchone()
            assert row is not None
            runs[n] = row[0]
    env = dict(os.environ, PGFLIGHT_DSN=_as(cluster3, OPERATOR))

    def cli(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "pgflight.cli", *args, "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    listed = {r["run_id"] for r in json.loads(cli("runs", "-n", "500"))}
    assert set(runs.values()) <= listed
    for n, run_id in runs.items():
        assert str(run_id) in cli("show", str(run_id)) and cells.cell_of(run_id) == n
        events = cli("events", str(run_id))
        assert json.loads(events)["events"], "the run's events, read from its cell"


#: Worker-lane functions that run on every cell, and why that is right for each.
WORKER_ON_EVERY_CELL = {
    "_lane_workspaces": "the login's workspaces of every cell",
    "_fake_now": "the test clock, set in every cell",
}


def test_every_worker_function_is_routed_by_workspace_or_by_an_id_naming_its_cell(conn) -> None:
    """The static half of the cell layout: a new worker-lane function must name its cell (by a
    workspace, an id, a batch of attempt ids) or be listed here with its reason; else the proxy
    would send it to every cell."""
    routes = {f.name: cells.route(f) for f in cells.catalogue(conn) if "pgflight_worker" in f.lanes}
    unkeyed = {n for n, r in routes.items() if r == "all"}
    assert unkeyed == set(WORKER_ON_EVERY_CELL), unkeyed ^ set(WORKER_ON_EVERY_CELL)
    assert routes["claim_batch"] == "custom" and routes["heartbeat"] == "split"
    assert routes["complete_step"] == "id" and routes["emit_event"] == "workspace"
    # every worker of the proxy meets on cell 1's key for a relayed wake ticket
    assert routes["wake_ticket_key"] == "any"
