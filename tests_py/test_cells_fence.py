"""
The fence matrix through the proxy of cells (docs/scaling.md): every function a lane may execute,
called as each lane's real login over scram through the proxy, with the hostile values of
fence_matrix_support in each argument the proxy routes by (ids, attempt id arrays and tokens,
worker ids, workspace names), answers as the cell's own function answers the same call: the same
SQLSTATE (or success), never PL/Proxy's text. The other arguments reach the cell unchanged (PL/Proxy
passes them through), so test_fence_matrix.py's calls of the cell cover them.

Three cells; workspaces A and B both live in cell 2, so every foreign id names cell 2, and each
call is made first on cell 2 directly as the same login (rolled back), then through the proxy (a
proxy call is not one transaction across cells: what it writes in a cell commits there). Ids that
name no cell of the proxy (cell 0, cell 7, negative, 2^53 and above) are routed to cell 1, which
answers them as unknown; the proxy adds a DETAIL naming the hole and a HINT.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from cells_support import cells_or_skip
from fence_matrix_support import (
    Outcome,
    allowed_state,
    build_foreign,
    build_inputs,
    lower_caps,
    parse_call,
    signatures,
    text_json,
)
from pgflight import cells
from security_support import CALLS, LANES, Conn, World, api_functions, grant, login_connect

PASSWORD = "cells-fence-test-password"
#: lane -> (the calling login, the workspace it is granted (None: every workspace), the lane)
CALLERS = {
    "worker": ("pgf_worker_a", "A", "worker"),
    "operator": ("pgf_operator_a", "A", "operator"),
    "reader": ("pgf_reader_a", "A", "reader"),
    "operator of every workspace": ("pgf_operator_b", None, "operator"),
}
#: the callers' logins and the other login whose attempts, tokens and workers the hostile values name
LOGINS = {login: f"pgflight_{lane}" for login, _, lane in CALLERS.values()} | {
    "pgf_worker_b": "pgflight_worker"
}
#: The arguments the proxy routes a call by: a hostile value in one of these is a routing hole.
ROUTED_BY = (*cells.ID_KEYS, "p_workspace", "p_name", "p_attempt_ids", "p_tokens", "p_token", "p_worker_id")
CELL = 2  # the cell of workspaces A and B


@pytest.fixture(scope="module")
def fenced() -> Iterator[dict[str, Any]]:
    with cells_or_skip(3, logins=LOGINS, password=PASSWORD) as lc:
        for n, d in enumerate(lc.cell_dsns, 1):
            with psycopg.connect(d, autocommit=True) as c:
                c.execute("update pgflight.settings set allow_fake_clock = true")
                lower_caps(c)
                c.execute("delete from pgflight.workspace_grants where login like 'pgf\\_%%'")
                if n != CELL:
                    grant(c, "pgf_operator_b", None, "operator")
        for ws in ("A", "B"):
            cells.place(lc.proxy_dsn, ws, CELL)
        with psycopg.connect(lc.proxy_dsn, autocommit=True) as c:
            c.execute("select pgflight.create_workspace('A'), pgflight.create_workspace('B')")
        su = psycopg.connect(lc.cell_dsns[CELL - 1], autocommit=True)
        for login, ws, lane in CALLERS.values():
            grant(su, login, ws, lane)
        grant(su, "pgf_worker_b", "A", "worker")
        grant(su, "pgf_worker_b", "B", "worker")
        opened: list[Conn] = []

        def connect(login: str, dsn: str) -> Conn:
            c = login_connect(lc.as_login(login, PASSWORD, dsn), timeout_s=30)
            text_json(c)
            opened.append(c)
            return c

        try:
            yield {"lc": lc, "su": su, "connect": connect}
        finally:
            for c in opened:
                c.close()
            su.close()


def _answer(conn: Conn, query: str, params: list[Any]) -> tuple[str | None, str]:
    """(SQLSTATE or None, the error's whole text) of one call in a rolled-back transaction."""
    try:
        with conn.transaction(force_rollback=True):
            conn.execute(query, params).fetchall()
    except psycopg.Error as e:
        d = e.diag
        return e.sqlstate, " | ".join(str(x) for x in (d.message_primary, d.message_detail, d.message_hint))
    return None, ""


def _directory_from_cell(lc: cells.LocalCells, su: Conn) -> None:
    """The workspaces a valid call made directly in the cell, entered in the proxy's directory (as
    `pgflight cells place` would), so the proxy routes them to the cell that holds them."""
    names = [r[0] for r in su.execute("select name from pgflight.workspaces").fetchall()]
    with psycopg.connect(lc.proxy_dsn, autocommit=True) as c:
        c.execute(
            "insert into pgflight_cells.workspaces (name, cell) select unnest(%s::text[]), %s"
            " on conflict (name) do nothing",
            [names, CELL],
        )


def _routed(label: str) -> bool:
    head = label.split(" = ")[0]
    return label == "the valid call" or any(k in head.split(", ") for k in ROUTED_BY)


@pytest.mark.timeout(1500)
@pytest.mark.parametrize("caller", list(CALLERS))
def test_hostile_routing_values_through_the_proxy_answer_as_the_cells_own_function(
    fenced: dict[str, Any], caller: str
) -> None:
    lc: cells.LocalCells = fenced["lc"]
    su: Conn = fenced["su"]
    login, _ws, lane = CALLERS[caller]
    via_proxy = fenced["connect"](login, lc.proxy_dsn)
    direct = fenced["connect"](login, lc.cell_dsns[CELL - 1])
    worker = fenced["connect"]("pgf_worker_a", lc.proxy_dsn)
    other = fenced["connect"]("pgf_worker_b", lc.proxy_dsn)
    foreign = build_foreign(su, worker, other)
    world = World(su=su, me=worker, workspace="A")
    world.worker_id = int(worker.execute("select pgflight.register_worker('matrix')").fetchone()[0])  # type: ignore[index]
    by_lane = {ln: api_functions(su, f"pgflight_{ln}") for ln in LANES}
    api = sorted(set().union(*by_lane.values()))
    missing = sorted(set(api) - set(CALLS))
    assert not missing, f"no valid call known for {missing}: add one to security_support.CALLS"
    sigs = signatures(su, api)
    outcome = Outcome()
    holes = 0
    started = time.monotonic()
    for fn in api:
        executable = fn in by_lane[lane]
        for sig in sigs[fn]:
            query, params = CALLS[fn](world)
            _directory_from_cell(lc, su)
            inputs = [
                i for i in build_inputs(sig, parse_call(fn, query, params), foreign) if _routed(i.label)
            ]
            for inp in inputs if executable else inputs[:1]:
                outcome.calls += 1
                cell_state, _ = _answer(direct, inp.query, inp.params)
                proxy_state, text = _answer(via_proxy, inp.query, inp.params)
                where = f"{sig.regprocedure} ({inp.label})"
                if "REMOTE ERROR" in text or "PL/Proxy" in text or "Remote " in text:
                    outcome.failures.append(f"{where}: PL/Proxy's text reached the caller: {text}")
                if proxy_state != cell_state:
                    outcome.failures.append(
                        f"{where}: the cell answers {cell_state}, the proxy {proxy_state}: {text}"
                    )
                elif proxy_state is not None and not allowed_state(proxy_state, executable):
                    outcome.failures.append(f"{where}: raised {proxy_state} (the cell too): {text}")
                if "names cell" in text:
                    holes += 1
    took = time.monotonic() - started
    print(
        f"\nproxy fence matrix, {caller}: {len(api)} functions, {outcome.calls} calls,"
        f" {holes} holes named, {took:.1f} s"
    )
    assert not outcome.failures, f"{len(outcome.failures)} differences:\n" + "\n".join(outcome.failures)


def test_an_id_that_names_no_cell_is_answered_by_pgflight_with_a_detail_and_a_hint(
    fenced: dict[str, Any],
) -> None:
    """Cell 0, a cell that does not exist, a negative id, 2^53 and above: the cell's SQLSTATE for an
    unknown id, a DETAIL naming the hole and a HINT; no PL/Proxy text, no cell database name."""
    lc: cells.LocalCells = fenced["lc"]
    me = fenced["connect"]("pgf_operator_b", lc.proxy_dsn)
    worker = fenced["connect"]("pgf_worker_a", lc.proxy_dsn)
    for bad in (5, 7 << 44 | 1, -1, -(1 << 50), 1 << 53, (1 << 63) - 1):
        for conn, query in (
            (me, "select * from pgflight.run_status(%s)"),
            (me, "select * from pgflight.cancel_run(%s)"),
            (worker, "select pgflight.complete_step(%s, 1, '{}')"),
            (worker, "select * from pgflight.start_step(%s, 1)"),
        ):
            with pytest.raises(psycopg.Error) as e:
                conn.execute(query, [bad])
            d = e.value.diag
            assert e.value.sqlstate is not None and e.value.sqlstate.startswith("ZF"), (
                query,
                bad,
                d.message_primary,
            )
            assert d.message_detail and f"names cell {bad >> cells.CELL_SHIFT}" in d.message_detail, (
                query,
                bad,
            )
            assert d.message_hint, (query, bad)
            whole = " ".join(str(x) for x in (d.message_primary, d.message_detail, d.message_hint, d.context))
            assert "REMOTE" not in whole and "plproxy" not in whole.lower() and "[postgres]" not in whole
