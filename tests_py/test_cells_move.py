"""
Moving a workspace between cells with work in flight, and wake-ups across cells
(docs/scaling.md): three PostgreSQL servers, one cell each, the proxy database on the first, the
real scram logins, the unchanged `pgflight worker` against the proxy. Skipped, saying why, when
PL/Proxy is not installed.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from pgflight import cells, cells_move, cells_wake
from test_cells import LOGINS, OPERATOR, PASSWORD, SETTINGS, WORKER
from worker_support import WorkerProc, start_worker, sweeping, wait_for

#: Tables of a cell that hold no workspace's rows, and why (every other table must be moved).
NOT_MOVED = {
    "workers": "a worker is registered in every cell under one id (register_worker through the proxy)",
    "settings": "the cell's own settings",
    "model_prices": "one price table per cell",
    "sweep_state": "the cell's sweeps",
    "engine_locks": "lock rows made on demand by scope",
    "recipe_limits": "limits of a recipe across the cell's workspaces",
    "wake_ticket_secret": "the cell's secret",
}


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


def _rows(dsn: str, query: str, params: Any = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as c:
        return c.execute(query, params).fetchall()


def test_every_table_holding_a_workspaces_rows_is_moved_after_the_tables_it_references(conn: Any) -> None:
    """The move's tables come from the catalogue: a new table that references a run, step, attempt,
    agent run, schedule or workspace (by foreign key or by such a column) is moved; one that does not
    must be listed here with its reason."""
    tables = cells_move.moved_tables(conn)
    names = [t.name for t in tables]
    every = {r[0] for r in conn.execute(cells_move.TABLES_SQL).fetchall()}
    assert every - set(names) == set(NOT_MOVED), (every - set(names)) ^ set(NOT_MOVED)
    for i, t in enumerate(tables):
        assert t.depends <= set(names[:i]), f"{t.name} comes before a table it references"
        for col in t.columns:
            if col in cells_move.NAMED_REFERENCES and cells_move.NAMED_REFERENCES[col] != t.name:
                assert (col, cells_move.NAMED_REFERENCES[col]) in t.references, (t.name, col)
    # the partitioned history with no foreign key is found by its columns
    assert {"events", "traces", "costs", "stream_chunks", "fan_in_stripes"} <= set(names)
    assert names[0] == "workspaces" and names.index("runs") < names.index("steps") < names.index(
        "step_attempts"
    )


def _submit(op: psycopg.Connection[Any], ws: str, recipe: str, inp: dict[str, Any] | None = None) -> int:
    row = op.execute(
        "select run_id from pgflight.submit_run(%s, %s, %s)", [ws, recipe, Jsonb(inp or {})]
    ).fetchone()
    assert row is not None
    return int(row[0])


def _status(dsn: str, run_id: int) -> str | None:
    rows = _rows(dsn, "select status from pgflight.runs where id = %s", [run_id])
    return str(rows[0][0]) if rows else None


def test_a_workspace_moves_with_queued_leased_parked_and_agent_work_and_each_step_ends_once(
    cluster3: cells.LocalCells, tmp_path: Path
) -> None:
    src, dst = cluster3.cell_dsns[0], cluster3.cell_dsns[1]
    ws = "moving"
    cells.place(cluster3.proxy_dsn, ws, 1)
    # a table added later, hanging off steps by a foreign key, in every cell: it moves too
    for d in cluster3.cell_dsns:
        with psycopg.connect(d, autocommit=True) as c:
            c.execute(
                "create table pgflight.move_probe (id bigint primary key,"
                " step_id bigint not null references pgflight.steps on delete cascade, note text)"
            )
    started: list[WorkerProc] = []
    op = psycopg.connect(_as(cluster3, OPERATOR), autocommit=True)
    agent = psycopg.connect(_as(cluster3, WORKER), autocommit=True)  # a worker that will be stale
    try:
        op.execute("select pgflight.create_workspace(%s)", [ws])
        with sweeping(cluster3.cell_dsns, every_s=0.3):
            w = start_worker(_as(cluster3, WORKER), tmp_path, "--lease", "2", "--poll", "0.2", "-c", "1")
            started.append(w)
            # parked: an approval gate, reached by the worker
            gated = _submit(op, ws, "gated")
            wait_for(
                lambda: (
                    _status(src, gated) == "running"
                    and _rows(
                        src,
                        "select 1 from pgflight.approvals a join pgflight.steps s on s.id = a.step_id"
                        " where s.run_id = %s",
                        [gated],
                    )
                ),
                30,
                "the gate to be requested",
            )
            gated_step = _rows(src, "select root_step_id from pgflight.runs where id = %s", [gated])[0][0]
            _rows(src, "insert into pgflight.move_probe values (1, %s, 'probe') returning id", [gated_step])
            # leased: a live worker mid-step (its one slot), then queued work behind it
            long = _submit(op, ws, "sleep", {"seconds": 3})
            wait_for(
                lambda: _rows(
                    src,
                    "select 1 from pgflight.step_attempts a where a.run_id = %s and a.status = 'running'",
                    [long],
                ),
                30,
                "the long step to run",
            )
            queued = [_submit(op, ws, "sleep", {"seconds": 0.05}) for _ in range(8)]
            # an agent step: a model call recorded (flight recorder, cost, spend), then its worker
            # stops answering (SIGSTOP-like: this connection just goes quiet) and its lease lapses
            wid = agent.execute("select pgflight.register_worker('agent')").fetchone()[0]  # type: ignore[index]
            agent_run = _submit(op, ws, "agentish")
            att, tok = agent.execute(
                "select attempt_id, fencing_token from pgflight.claim_batch(%s, 1, 1, array['agentish'])",
                [wid],
            ).fetchone()  # type: ignore[misc]
            agent.execute("select * from pgflight.start_step(%s, %s)", [att, tok])
            ar = agent.execute(
                "select agent_run_id from pgflight.begin_agent_run(%s, %s, %s)",
                [att, tok, Jsonb({"model": "claude-haiku-4-5", "task": "t"})],
            ).fetchone()[0]  # type: ignore[index]
            agent.execute(
                "select * from pgflight.record_model_call(%s, %s, %s, 1, %s, %s, 'claude-haiku-4-5')",
                [att, tok, ar, Jsonb([{"type": "text", "text": "thinking"}]), Jsonb({"input_tokens": 1000})],
            )
            # parked on an event: a step waiting for "go"/"x" of its workspace, without a lease
            evented = _submit(op, ws, "eventish")
            ea, et = agent.execute(
                "select attempt_id, fencing_token from pgflight.claim_batch(%s, 1, 30, array['eventish'])",
                [wid],
            ).fetchone()  # type: ignore[misc]
            agent.execute("select * from pgflight.start_step(%s, %s)", [ea, et])
            parked = agent.execute(
                "select waiting from pgflight.wait_event(%s, %s, 'w', 'go', 'x')", [ea, et]
            ).fetchone()
            assert parked == (True,)
            spent = _rows(src, "select usd, iterations from pgflight.agent_runs where id = %s", [ar])[0]
            assert spent[0] > 0
            history = {
                r: _rows(src, "select id, reason from pgflight.run_events where run_id = %s order by id", [r])
                for r in [gated, long, agent_run, evented, *queued]
            }
            said: list[str] = []
            report = cells_move.move_workspace(cluster3.proxy_dsn, ws, 2, timeout_s=30, say=said.append)
            print("\nmove:", said[-1])
            assert report.drain_s > 0.5, "the move waited for the live step to end"
            # the directory and the rows: in cell 2, gone from cell 1 but for the tombstone
            with psycopg.connect(src) as s:
                assert {t.name for t in cells_move.moved_tables(s)} == set(report.rows)
            assert report.rows["move_probe"] == 1 and _rows(dst, "select note from pgflight.move_probe") == [
                ("probe",)
            ]
            ws_id = _rows(dst, "select id from pgflight.workspaces where name = %s", [ws])[0][0]
            assert cells.cell_of(ws_id) == 1, "ids keep the cell they were made in"
            with psycopg.connect(src) as s:
                for t in cells_move.moved_tables(s):
                    n = s.execute(
                        f"select count(*) from pgflight.{cells.sql_ident(t.name)} where {t.predicate}",
                        {"ws": ws_id},
                    ).fetchone()
                    assert n == (0,), f"{t.name} still holds the workspace's rows in the source"
            assert _rows(src, "select name, to_cell from pgflight_cell.moved_out") == [(ws, 2)]
            for r, before in history.items():
                after = _rows(
                    dst, "select id, reason from pgflight.run_events where run_id = %s order by id", [r]
                )
                assert after[: len(before)] == before, f"run {r}: its history before the move, whole"
            assert (
                _rows(dst, "select usd, iterations from pgflight.agent_runs where id = %s", [ar])[0] == spent
            )
            # the stale writer: its lease lapsed before the move; through the proxy its write is
            # routed to the new cell by the moved id, and refused there by the fence
            with pytest.raises(psycopg.Error) as e:
                agent.execute("select pgflight.complete_step(%s, %s, '{}')", [att, tok])
            assert e.value.sqlstate == "ZF001"
            # the agent step again, through the proxy: its new attempt (made by the reclaim in the
            # old cell, an id of cell 1) heartbeats and completes in cell 2, with its flight recorder
            att2, tok2 = wait_for(
                lambda: agent.execute(
                    "select attempt_id, fencing_token"
                    " from pgflight.claim_batch(%s, 1, 30, array['agentish'])",
                    [wid],
                ).fetchone(),
                10,
                "the agent step to be claimed in its new cell",
            )
            assert cells.cell_of(att2) == 1
            beats = agent.execute(
                "select attempt_id, status from pgflight.heartbeat(%s, %s, %s)", [wid, [att2], [tok2]]
            ).fetchall()
            assert beats == [(att2, "held")]
            again = agent.execute(
                "select agent_run_id from pgflight.begin_agent_run(%s, %s, %s)",
                [att2, tok2, Jsonb({"model": "claude-haiku-4-5", "task": "t"})],
            ).fetchone()[0]  # type: ignore[index]
            assert again == ar, "the same agent run, its transcript in the new cell"
            blocks = agent.execute(
                "select count(*) from pgflight.load_transcript(%s, %s, %s)", [att2, tok2, ar]
            ).fetchone()
            assert blocks is not None and blocks[0] >= 1
            agent.execute("select * from pgflight.complete_step(%s, %s, '{}')", [att2, tok2])
            # the gate, decided through the proxy by its step id (an id of cell 1)
            op.execute("select * from pgflight.approve(%s, 'approve', 'op', 'ok')", [gated_step])
            # the event, emitted through the proxy by the workspace's name (now cell 2's): the
            # parked step is requeued there and runs to its end with the event's payload
            op.execute("select * from pgflight.emit_event(%s, 'go', 'x', '{\"n\": 1}')", [ws])
            ea2, et2 = wait_for(
                lambda: agent.execute(
                    "select attempt_id, fencing_token"
                    " from pgflight.claim_batch(%s, 1, 30, array['eventish'])",
                    [wid],
                ).fetchone(),
                10,
                "the woken event step to be claimed in its new cell",
            )
            agent.execute("select * from pgflight.start_step(%s, %s)", [ea2, et2])
            got = agent.execute(
                "select outcome, payload from pgflight.wait_event(%s, %s, 'w', 'go', 'x')", [ea2, et2]
            ).fetchone()
            assert got == ("received", {"n": 1}), got
            agent.execute("select * from pgflight.complete_step(%s, %s, '{}')", [ea2, et2])
            # new work of the moved workspace lands in cell 2 with cell 2's ids
            late = _submit(op, ws, "sleep", {"seconds": 0.05})
            assert cells.cell_of(late) == 2
            every = [gated, long, agent_run, evented, *queued, late]
            wait_for(
                lambda: all(_status(dst, r) == "succeeded" for r in every),
                60,
                "every run of the moved workspace to succeed in cell 2",
            )
    finally:
        for w in started:
            w.kill()
        op.close()
        agent.close()
        for d in cluster3.cell_dsns:
            with psycopg.connect(d, autocommit=True) as c:
                c.execute("drop table if exists pgflight.move_probe")
    once = _rows(
        dst,
        "select s.id, count(*) filter (where a.status = 'succeeded'),"
        " (select count(*) from pgflight.run_events e where e.step_id = s.id and e.reason = 'succeeded')"
        " from pgflight.steps s join pgflight.runs r on r.id = s.run_id"
        " join pgflight.step_attempts a on a.step_id = s.id where r.workspace_id = %s group by s.id",
        [ws_id],
    )
    assert len(once) == len(every)
    assert {(r[1], r[2]) for r in once} == {(1, 1)}, (
        f"a step succeeded twice or never: {once}\n{w.output()[-3000:]}"
    )
    assert _rows(src, "select count(*) from pgflight.runs") == [(0,)] or all(
        _status(src, r) is None for r in every
    )
    with psycopg.connect(cluster3.proxy_dsn) as px:
        assert px.execute("select count(*) from pgflight_cells.moves").fetchone() == (0,)
        assert px.execute("select cell from pgflight_cells.workspaces where name = %s", [ws]).fetchone() == (
            2,
        )
    # and back home: ids of cell 1 need no entry any more, cell 2's ids now point at cell 1, and
    # cell 1's sequences run on past the ids it made before
    back = cells_move.move_workspace(cluster3.proxy_dsn, ws, 1, timeout_s=30)
    assert back.rows["runs"] == len(every)
    assert _rows(src, "select count(*) from pgflight_cell.moved_out") == [(0,)], "home: no tombstone"
    assert _rows(dst, "select name, to_cell from pgflight_cell.moved_out") == [(ws, 1)]
    with psycopg.connect(cluster3.proxy_dsn) as px:
        ids = px.execute(
            "select id >> 44, cell, count(*) from pgflight_cells.moved_ids group by 1, 2"
        ).fetchall()
        assert {(named, lives) for named, lives, _ in ids} == {(2, 1)}, ids
    with psycopg.connect(_as(cluster3, OPERATOR), autocommit=True) as op2:
        for r in (gated, late):
            row = op2.execute("select status from pgflight.run_status(%s)", [r]).fetchone()
            assert row == ("succeeded",), (r, row)
        home = _submit(op2, ws, "noop")
        assert cells.cell_of(home) == 1 and home > max(r for r in every if cells.cell_of(r) == 1)


def test_a_move_that_cannot_drain_its_leases_gives_up_and_leaves_the_workspace_running_where_it_was(
    cluster3: cells.LocalCells,
) -> None:
    ws = "held_fast"
    cells.place(cluster3.proxy_dsn, ws, 3)
    with (
        psycopg.connect(_as(cluster3, OPERATOR), autocommit=True) as op,
        psycopg.connect(_as(cluster3, WORKER), autocommit=True) as w,
    ):
        op.execute("select pgflight.create_workspace(%s)", [ws])
        run = _submit(op, ws, "held")
        wid = w.execute("select pgflight.register_worker('held')").fetchone()[0]  # type: ignore[index]
        att = w.execute(
            "select attempt_id from pgflight.claim_batch(%s, 1, 600, array['held'])", [wid]
        ).fetchone()
        assert att is not None
        # through the command line: `pgflight cells move`
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pgflight.cli",
                "cells",
                "move",
                "--proxy",
                cluster3.proxy_dsn,
                ws,
                "--to",
                "1",
                "--timeout",
                "1",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2, done.stderr
        assert "still holds 1 lease(s)" in done.stderr and f"attempt {att[0]}" in done.stderr
        assert "Nothing was moved" in done.stderr
        assert (
            _status(cluster3.cell_dsns[2], run) == "running"
            or _status(cluster3.cell_dsns[2], run) == "queued"
        )
        paused = _rows(
            cluster3.cell_dsns[2],
            "select l.paused_at from pgflight.workspace_limits l"
            " join pgflight.workspaces x on x.id = l.workspace_id"
            " where x.name = %s",
            [ws],
        )
        assert paused in ([], [(None,)]), "resumed where it was"
        # the workspace answers through the proxy as before
        _submit(op, ws, "held")
    with psycopg.connect(cluster3.proxy_dsn) as px:
        assert px.execute("select count(*) from pgflight_cells.moves").fetchone() == (0,)
        assert px.execute("select cell from pgflight_cells.workspaces where name = %s", [ws]).fetchone() == (
            3,
        )


def test_a_frozen_workspace_is_refused_through_the_proxy_with_a_retryable_code(
    cluster3: cells.LocalCells,
) -> None:
    ws = "frozen"
    cells.place(cluster3.proxy_dsn, ws, 1)
    with psycopg.connect(_as(cluster3, OPERATOR), autocommit=True) as op:
        op.execute("select pgflight.create_workspace(%s)", [ws])
        cells_move._journal(cluster3.proxy_dsn, ws, 1, 2, "frozen", False)
        try:
            with pytest.raises(psycopg.Error) as e:
                _submit(op, ws, "noop")
            assert e.value.sqlstate == "ZF014"
        finally:
            cells_move._close(cluster3.proxy_dsn, ws)
        _submit(op, ws, "noop")


def _start_latencies(dsn: str, runs: list[int]) -> list[float]:
    rows = _rows(
        dsn,
        "select extract(epoch from min(a.claimed_at) - r.created_at) from pgflight.runs r"
        " join pgflight.step_attempts a on a.run_id = r.id where r.id = any (%s) group by r.id",
        [runs],
    )
    return [float(r[0]) for r in rows]


def test_the_relay_wakes_workers_of_the_proxy_in_every_cell_and_survives_a_cell_restart(
    cluster3: cells.LocalCells, tmp_path: Path
) -> None:
    """The unchanged worker listens on the proxy; the relay brings each cell's NOTIFY there. A run
    submitted into any cell starts well within the 2 s poll; after a cell's restart the relay
    listens again and the cell's next runs still start at once."""
    poll = 2.0
    spaces = {n: f"wake{n}" for n in (1, 2, 3)}
    relay = cells_wake.Relay(cluster3.proxy_dsn)
    relay.start()
    started: list[WorkerProc] = []
    try:
        assert relay.wait_listening(10), "the relay listens on every cell"
        with psycopg.connect(_as(cluster3, OPERATOR), autocommit=True) as op:
            for n, name in spaces.items():
                cells.place(cluster3.proxy_dsn, name, n)
                op.execute("select pgflight.create_workspace(%s)", [name])
            w = start_worker(_as(cluster3, WORKER), tmp_path, "--poll", str(poll))
            started.append(w)
            wait_for(
                lambda: "listening on pgflight_ready" in w.output(), 30, "the worker to listen on the proxy"
            )
            time.sleep(0.5)  # the worker idle: its claims found every cell quiet

            def burst(rounds: int) -> dict[int, list[int]]:
                runs: dict[int, list[int]] = {n: [] for n in spaces}
                for _ in range(rounds):
                    for n, name in spaces.items():
                        runs[n].append(_submit(op, name, "noop"))
                        time.sleep(0.3)  # one at a time: each a fresh wake-up, not a backlog
                return runs

            def latencies(runs: dict[int, list[int]]) -> list[float]:
                for n, ids in runs.items():
                    wait_for(
                        lambda n=n, ids=ids: all(
                            _status(cluster3.cell_dsns[n - 1], r) == "succeeded" for r in ids
                        ),
                        30,
                        f"the runs of cell {n} to succeed",
                    )
                return [
                    x for n, ids in runs.items() for x in _start_latencies(cluster3.cell_dsns[n - 1], ids)
                ]

            before = latencies(burst(4))
            cluster3.clusters[1].stop("fast")
            cluster3.clusters[1].start()
            wait_for(
                lambda: relay.reconnects[2] >= 1 and relay.listening[2],
                30,
                "the relay to listen on cell 2 again",
            )
            time.sleep(2.5)  # the worker's claims past the cell's down mark
            after = latencies(burst(3))
            # a wake-up sent while the relay did not listen (its backend on cell 3 ended, then a run
            # submitted at once) is not lost: the relay's reconnect wakes the workers for that cell
            with psycopg.connect(cluster3.cell_dsns[2], autocommit=True) as c3:
                n = relay.reconnects[3]
                c3.execute(
                    "select pg_terminate_backend(pid) from pg_stat_activity"
                    " where application_name = 'pgflight-relay-cell3'"
                )
                missed = _submit(op, spaces[3], "noop")
            wait_for(lambda: relay.reconnects[3] > n, 30, "the relay to listen on cell 3 again")
            wait_for(lambda: _status(cluster3.cell_dsns[2], missed) == "succeeded", 30, "the missed run")
            gap = _start_latencies(cluster3.cell_dsns[2], [missed])[0]
    finally:
        for w in started:
            w.kill()
        relay.stop()
    for label, xs in (("before the restart", before), ("after cell 2's restart", after)):
        print(
            f"\nwake through the relay, {label}: submit -> claim p50 {statistics.median(xs) * 1000:.1f} ms,"
            f" max {max(xs) * 1000:.1f} ms over {len(xs)} runs (poll {poll:g} s)"
        )
        assert max(xs) < poll / 2, f"{label}: a run waited for the poll: {sorted(xs)}"
        assert statistics.median(xs) < 0.25, f"{label}: {sorted(xs)}"
    print(f"a run notified while the relay's listener was away: claimed after {gap * 1000:.1f} ms")
    assert gap < poll / 2, "the relay's reconnect stood for the wake-up it missed"
