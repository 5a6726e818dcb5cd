"""
Moving a workspace between cells with work in flight (docs/scaling.md, "Moving a workspace").

The move is an operator's act, run with the cells' and the proxy's administrator DSNs:

1. **pause**: the workspace is paused in its cell (``pause_workspace``; a workspace paused before
   stays paused after), so nothing more of it is claimed;
2. **drain**: its leases end (the steps finish) or lapse (reclaimed here, ``reclaim_expired``),
   within a timeout, else the move is given up, the workspace resumed, and nothing moved;
3. **freeze**: the proxy refuses the workspace's calls by name (``ZF014``, retry) while, in one
   repeatable-read transaction of the source cell, the rows every other table hangs off are
   locked, no lease is found live, and every row of the workspace is copied to the target cell
   (``COPY``, triggers and foreign keys off as in a restore, so each row lands as it was);
4. **switch**: the proxy's directory names the target cell, and every id of the workspace that
   the API addresses (workspace, runs, steps, attempts, agent runs) is entered in the proxy's
   ``moved_ids``: ids keep the cell bits they were made with, and routing by id looks there
   first; then the source cell's rows are deleted, a tombstone left (``pgflight_cell.moved_out``);
5. **resume** in the target (which wakes its workers).

The tables come from the source cell's catalogue (:func:`moved_tables`): the ``workspaces`` row
and every table that references a moved table, by foreign key or by a column named after one
(``run_id`` …: the partitioned tables carry no foreign keys), in reference order. Copied ids name
another cell than the target's (or are the target's own, made by its sequences before), so they
never meet the target's sequences; :func:`_sequences_past` checks it.

Not atomic: three databases commit one after the other (target, proxy, source); the journal
``pgflight_cells.moves`` holds the phase, and rerunning the move finishes one that was cut off.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pgflight import cells

#: Columns named after the table they reference, where the catalogue holds no foreign key
#: (partitioned tables and counters carry none): a row belongs to a workspace through them.
NAMED_REFERENCES = {
    "workspace_id": "workspaces",
    "run_id": "runs",
    "step_id": "steps",
    "attempt_id": "step_attempts",
    "agent_run_id": "agent_runs",
    "schedule_id": "schedules",
}
#: References no name says: (table, column) -> the table it references.
EXTRA_REFERENCES = {
    ("fan_in_stripes", "parent_id"): "steps",  # a parent's fan-in counters
    ("flow_slots", "scope"): "workspaces",  # a workspace's in-flight slots (scope 0: the global cap)
    ("flow_slot_returns", "scope"): "workspaces",
}
#: The moved tables whose ids the API addresses (cells.ID_KEYS): routed through moved_ids.
ROUTED_ID_TABLES = ("workspaces", "runs", "steps", "step_attempts", "agent_runs")
LEASED = ("claimed", "running", "cancel_requested")

MOVE_KIT = """
create table if not exists pgflight_cell.moved_out (
  workspace_id bigint primary key,
  name text not null,
  to_cell integer not null,
  moved_at timestamptz not null default clock_timestamp()
);
comment on table pgflight_cell.moved_out is
  'Tombstones: workspaces moved to another cell (their rows deleted here), and where they went.';
revoke all on pgflight_cell.moved_out from public;
"""


class MoveError(cells.CellsError):
    """A workspace cannot be moved as asked (nothing was moved unless the message says so)."""


@dataclass(frozen=True)
class MovedTable:
    """One table of a workspace's rows: which of its rows, after which tables."""

    name: str
    columns: tuple[str, ...]  # copied: every column but generated ones
    references: tuple[tuple[str, str], ...]  # (column, moved table it references), self excluded
    predicate: str  # SQL over the table's columns with %(ws)s: the workspace's rows

    @property
    def depends(self) -> set[str]:
        return {t for _, t in self.references}


TABLES_SQL = """
select c.relname::text,
       array_agg(a.attname::text order by a.attnum) filter (where a.attgenerated = ''),
       array_agg(a.attname::text order by a.attnum) filter (where a.attnotnull)
from pg_class c join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
where c.relnamespace = 'pgflight'::regnamespace and c.relkind in ('r', 'p') and not c.relispartition
group by c.relname order by 1
"""
FKEYS_SQL = """
select c.conrelid::regclass::text, a.attname::text, c.confrelid::regclass::text
from pg_constraint c
join pg_attribute a on a.attrelid = c.conrelid and a.attnum = c.conkey[1]
where c.contype = 'f' and c.connamespace = 'pgflight'::regnamespace and cardinality(c.conkey) = 1
"""


def moved_tables(conn: psycopg.Connection[tuple[object, ...]]) -> list[MovedTable]:
    """
    The tables holding a workspace's rows, from the catalogue of the database `conn` reaches, in
    reference order (a table after every table it references): ``workspaces``, then every table
    that references a moved table by foreign key, by a column named after it
    (:data:`NAMED_REFERENCES`) or by :data:`EXTRA_REFERENCES`. A row is the workspace's when its
    ``workspace_id`` (not null) is the workspace's, else when any of its references is.
    """
    tables: dict[str, tuple[tuple[str, ...], set[str]]] = {}
    for n, cols, notnull in conn.execute(TABLES_SQL).fetchall():
        assert isinstance(cols, list) and (notnull is None or isinstance(notnull, list))
        tables[str(n)] = (tuple(str(c) for c in cols), {str(c) for c in notnull or ()})
    refs: dict[str, dict[str, str]] = {t: {} for t in tables}
    for t, col, ref in conn.execute(FKEYS_SQL).fetchall():
        t, ref = str(t).removeprefix("pgflight."), str(ref).removeprefix("pgflight.")
        if t in refs:
            refs[t][str(col)] = ref
    for t, (cols, _) in tables.items():
        for col in cols:
            named = NAMED_REFERENCES.get(col) or EXTRA_REFERENCES.get((t, col))
            if named and named != t and named in tables:
                refs[t].setdefault(col, named)
    # which tables: workspaces and, to a fixpoint, every table referencing one already in
    names = {"workspaces"}
    changed = True
    while changed:
        changed = False
        for t in sorted(tables):
            if t not in names and any(r in names and r != t for r in refs[t].values()):
                names.add(t)
                changed = True
    deps = {t: tuple(sorted((c, r) for c, r in refs[t].items() if r in names and r != t)) for t in names}
    deps["workspaces"] = ()
    # in reference order; each table's rows named through its references' (already made) predicates
    order: list[MovedTable] = []
    done: dict[str, MovedTable] = {}
    while len(order) < len(names):
        for t in sorted(names):
            if t in done or not {r for _, r in deps[t]} <= set(done):
                continue
            cols, notnull = tables[t]
            if t == "workspaces":
                pred = "id = %(ws)s"
            elif ("workspace_id", "workspaces") in deps[t] and "workspace_id" in notnull:
                pred = "workspace_id = %(ws)s"
            else:
                pred = " or ".join(
                    f"{cells.sql_ident(c)} = %(ws)s"
                    if r == "workspaces"
                    else f"{cells.sql_ident(c)} in"
                    f" (select id from pgflight.{cells.sql_ident(r)} where {done[r].predicate})"
                    for c, r in deps[t]
                )
            done[t] = MovedTable(t, cols, deps[t], pred)
            order.append(done[t])
            break
        else:  # pragma: no cover - a reference cycle between tables (there is none today)
            raise MoveError(f"reference cycle among {sorted(names - set(done))}")
    return order


@dataclass
class MoveReport:
    """What a move did: how long each phase took, and how many rows of each table it moved."""

    workspace: str
    from_cell: int
    to_cell: int
    rows: dict[str, int] = field(default_factory=dict)
    routed_ids: int = 0
    drain_s: float = 0.0
    frozen_s: float = 0.0
    total_s: float = 0.0


def admin_dsns(proxy_dsn: str) -> dict[int, str]:
    """Each cell's DSN as the proxy's administrator login (the proxy's connection strings carry none)."""
    params = {k: v for k, v in conninfo_to_dict(proxy_dsn).items() if k in ("user", "password")}
    with psycopg.connect(proxy_dsn, autocommit=True) as c:
        rows = c.execute("select cell, connstr from pgflight_cells.cells order by cell").fetchall()
    return {int(n): make_conninfo(str(s), **params) for n, s in rows}


def move_workspace(
    proxy_dsn: str,
    workspace: str,
    to_cell: int,
    *,
    cell_dsns: Mapping[int, str] | None = None,
    timeout_s: float = 300.0,
    poll_s: float = 0.2,
    say: Callable[[str], None] = lambda _: None,
) -> MoveReport:
    """
    Move `workspace` to cell `to_cell` with its work in flight (see the module's docstring).

    :param proxy_dsn: the proxy database as its administrator (the superuser that deployed it).
    :param cell_dsns: each cell's administrator DSN; by default the proxy's connection strings
        with the proxy DSN's user and password.
    :param timeout_s: how long to wait for the workspace's leases to end or lapse.
    :return: the phases' durations and the rows moved per table.
    :raises MoveError: unknown workspace or cell, already there, leases still live at the timeout
        (then nothing was moved and the workspace runs again where it was), a name taken in the
        target cell.
    """
    t0 = time.monotonic()
    dsns = dict(cell_dsns or admin_dsns(proxy_dsn))
    with psycopg.connect(proxy_dsn, autocommit=True) as px:
        row = px.execute("select cell from pgflight_cells.workspaces where name = %s", [workspace]).fetchone()
        if row is None:
            raise MoveError(f"workspace {workspace!r} is not in the proxy's directory")
        from_cell = int(row[0])
        journal = px.execute(
            "select from_cell, to_cell, phase, paused_by_move from pgflight_cells.moves where workspace = %s",
            [workspace],
        ).fetchone()
    if to_cell not in dsns:
        raise MoveError(f"cell {to_cell} is not behind this proxy (cells {sorted(dsns)})")
    report = MoveReport(workspace, from_cell, to_cell)
    paused_by_move = False
    if journal is not None:
        j_from, j_to, phase, paused_by_move = journal
        if phase == "switched":  # cut off after the switch: finish the source's side
            say(f"finishing the move of {workspace} to cell {j_to} cut off after the switch")
            _finish_source(dsns[int(j_from)], workspace, int(j_to))
            _resume_and_close(proxy_dsn, dsns[int(j_to)], workspace, bool(paused_by_move))
            report.total_s = time.monotonic() - t0
            return report
        if int(j_to) != to_cell:
            raise MoveError(f"workspace {workspace!r} is being moved to cell {j_to}; finish that move first")
        say(f"restarting the move of {workspace}, cut off in phase {phase}")
    if from_cell == to_cell:
        raise MoveError(f"workspace {workspace!r} is in cell {to_cell} already")
    src, dst = dsns[from_cell], dsns[to_cell]
    for d in (src, dst):
        with psycopg.connect(d, autocommit=True) as c:
            c.execute(MOVE_KIT.encode())
    _journal(proxy_dsn, workspace, from_cell, to_cell, "pausing", paused_by_move)
    with psycopg.connect(src, autocommit=True) as s:
        ws = s.execute("select id from pgflight.workspaces where name = %s", [workspace]).fetchone()
        if ws is None:
            _close(proxy_dsn, workspace)
            raise MoveError(
                f"workspace {workspace!r} is not in cell {from_cell}, where the directory puts it"
            )
        ws_id = int(ws[0])
        paused = s.execute(
            "select pgflight.pause_workspace(%s, %s)", [workspace, f"moving to cell {to_cell}"]
        )
        paused_by_move = bool(paused_by_move) or bool(paused.fetchone()[0])  # type: ignore[index]
    _journal(proxy_dsn, workspace, from_cell, to_cell, "draining", paused_by_move)
    say(f"{workspace}: paused in cell {from_cell}; waiting for its leases to end or lapse")
    t_drain = time.monotonic()
    for attempt in range(5):
        live = _drain(src, ws_id, timeout_s - (time.monotonic() - t_drain), poll_s)
        if live:
            _give_up(proxy_dsn, src, workspace, paused_by_move)
            shown = ", ".join(
                f"attempt {a} ({st}, worker {w}, lease until {until:%H:%M:%S})"
                for a, st, w, until in live[:5]
            )
            raise MoveError(
                f"workspace {workspace!r} still holds {len(live)} lease(s) after {timeout_s:g} s: {shown}"
                f"{' …' if len(live) > 5 else ''}. Nothing was moved and the workspace runs again in cell "
                f"{from_cell}; retry when its long steps are done, or with a longer --timeout."
            )
        report.drain_s = time.monotonic() - t_drain
        _journal(proxy_dsn, workspace, from_cell, to_cell, "frozen", paused_by_move)
        t_frozen = time.monotonic()
        try:
            done = _copy_switch_delete(proxy_dsn, src, dst, workspace, ws_id, from_cell, to_cell, report)
        except psycopg.errors.SerializationFailure:
            done = False  # a row of the workspace changed under the snapshot: look again
        except BaseException:
            _unfreeze(proxy_dsn, workspace)
            raise
        report.frozen_s = time.monotonic() - t_frozen
        if done:
            break
        say(f"{workspace}: a lease or a change came in while freezing (try {attempt + 1}); draining again")
        _unfreeze(proxy_dsn, workspace)
    else:
        _give_up(proxy_dsn, src, workspace, paused_by_move)
        raise MoveError(f"workspace {workspace!r} kept changing while being frozen; nothing was moved")
    _resume_and_close(proxy_dsn, dst, workspace, paused_by_move)
    report.total_s = time.monotonic() - t0
    say(
        f"{workspace}: moved from cell {from_cell} to cell {to_cell}: {sum(report.rows.values())} rows, "
        f"{report.routed_ids} routed ids; drained in {report.drain_s:.2f} s, frozen {report.frozen_s:.3f} s"
    )
    return report


def _journal(proxy_dsn: str, workspace: str, from_cell: int, to_cell: int, phase: str, paused: bool) -> None:
    with psycopg.connect(proxy_dsn, autocommit=True) as px:
        px.execute(
            "insert into pgflight_cells.moves (workspace, from_cell, to_cell, phase, paused_by_move)"
            " values (%s, %s, %s, %s, %s) on conflict (workspace) do update set phase = excluded.phase,"
            " paused_by_move = excluded.paused_by_move, updated_at = clock_timestamp()",
            [workspace, from_cell, to_cell, phase, paused],
        )


def _unfreeze(proxy_dsn: str, workspace: str) -> None:
    """Back to draining (the workspace's calls accepted again), unless the directory was switched."""
    with psycopg.connect(proxy_dsn, autocommit=True) as px:
        px.execute(
            "update pgflight_cells.moves set phase = 'draining', updated_at = clock_timestamp()"
            " where workspace = %s and phase in ('frozen', 'copied')",
            [workspace],
        )


def _close(proxy_dsn: str, workspace: str) -> None:
    with psycopg.connect(proxy_dsn, autocommit=True) as px:
        px.execute("delete from pgflight_cells.moves where workspace = %s", [workspace])


def _give_up(proxy_dsn: str, src: str, workspace: str, paused_by_move: bool) -> None:
    if paused_by_move:
        with psycopg.connect(src, autocommit=True) as s:
            s.execute("select pgflight.resume_workspace(%s, 'move given up')", [workspace])
    _close(proxy_dsn, workspace)


def _resume_and_close(proxy_dsn: str, dst: str, workspace: str, paused_by_move: bool) -> None:
    with psycopg.connect(dst, autocommit=True) as d:
        if paused_by_move:  # resume notifies the cell's idle workers
            d.execute("select pgflight.resume_workspace(%s, 'moved here')", [workspace])
    _close(proxy_dsn, workspace)


def _live_leases(conn: psycopg.Connection[tuple[object, ...]], ws_id: int) -> list[tuple[object, ...]]:
    return conn.execute(
        "select id, status, worker_id, lease_expires_at from pgflight.step_attempts"
        " where workspace_id = %s and status = any (%s) order by id",
        [ws_id, list(LEASED)],
    ).fetchall()


def _drain(src: str, ws_id: int, timeout_s: float, poll_s: float) -> list[tuple[object, ...]]:
    """Wait for the workspace's leases to end or lapse (reclaimed here); the live ones at the timeout."""
    deadline = time.monotonic() + max(timeout_s, 0.0)
    with psycopg.connect(src, autocommit=True) as s:
        while True:
            s.execute("select pgflight.reclaim_expired()")
            live = _live_leases(s, ws_id)
            if not live or time.monotonic() >= deadline:
                return live
            time.sleep(poll_s)


def _copy_switch_delete(
    proxy_dsn: str,
    src: str,
    dst: str,
    workspace: str,
    ws_id: int,
    from_cell: int,
    to_cell: int,
    report: MoveReport,
) -> bool:
    """
    The frozen part: lock, copy, commit the target, switch the proxy, delete in the source. False
    when a lease was found live under the locks (nothing copied; drain again).
    """
    params = {"ws": ws_id}
    with psycopg.connect(src) as s, psycopg.connect(dst) as d:
        s.execute("set transaction isolation level repeatable read")
        s.execute("set local statement_timeout = '60s'")
        tables = moved_tables(s)
        target_tables = {t.name: t.columns for t in moved_tables(d)}
        mismatch = [t.name for t in tables if target_tables.get(t.name) != t.columns]
        if mismatch:
            raise MoveError(
                f"the target cell's tables differ from the source's ({mismatch}): migrate both first"
            )
        parents = {r for t in tables for r in t.depends}
        # the rows every other row hangs off, locked: no step, attempt, wait or run of the workspace
        # can change or be added until the source commits (inserts wait on their foreign keys)
        for t in tables:
            if t.name in parents:
                s.execute(
                    sql.SQL("select count(*) from (select 1 from pgflight.{} where {} for update) x").format(
                        sql.Identifier(t.name),
                        sql.SQL(t.predicate),
                    ),
                    params,
                )
        if _live_leases(s, ws_id):
            s.rollback()
            return False
        routed: list[int] = []
        for name in ROUTED_ID_TABLES:
            t = next(x for x in tables if x.name == name)
            routed += [
                int(r[0])
                for r in s.execute(
                    sql.SQL("select id from pgflight.{} where {}").format(
                        sql.Identifier(name),
                        sql.SQL(t.predicate),
                    ),
                    params,
                ).fetchall()
            ]
        # the target: a leftover of a move cut off before the switch is removed first
        d.execute("set session_replication_role = replica")
        d.execute("set local statement_timeout = '300s'")
        clash = d.execute("select id from pgflight.workspaces where name = %s", [workspace]).fetchone()
        if clash is not None:
            if int(clash[0]) != ws_id:
                raise MoveError(f"cell {to_cell} has another workspace named {workspace!r}")
            _delete_rows(d, tables, params)
        for t in tables:
            cols = sql.SQL(", ").join(sql.Identifier(c) for c in t.columns)
            out = sql.SQL("copy (select {} from pgflight.{} where {}) to stdout (format binary)").format(
                cols,
                sql.Identifier(t.name),
                sql.SQL(t.predicate),
            )
            into = sql.SQL("copy pgflight.{} ({}) from stdin (format binary)").format(
                sql.Identifier(t.name), cols
            )
            with s.cursor() as sc, d.cursor() as dc:
                with sc.copy(out, params) as cin, dc.copy(into) as cout:
                    for block in cin:
                        cout.write(block)
                report.rows[t.name] = dc.rowcount if dc.rowcount >= 0 else 0
        _sequences_past(d, tables, to_cell)
        d.execute("delete from pgflight_cell.moved_out where workspace_id = %s", [ws_id])  # back home
        d.commit()
        with psycopg.connect(proxy_dsn, autocommit=True) as px:
            px.execute("update pgflight_cells.moves set phase = 'copied' where workspace = %s", [workspace])
        with psycopg.connect(proxy_dsn) as px:
            px.execute("update pgflight_cells.workspaces set cell = %s where name = %s", [to_cell, workspace])
            px.execute(
                "insert into pgflight_cells.moved_ids (id, cell)"
                " select distinct x, %s from unnest(%s::bigint[]) x"
                " where x >> %s <> %s on conflict (id) do update set cell = excluded.cell",
                [to_cell, routed, cells.CELL_SHIFT, to_cell],
            )
            # ids back in the cell they name need no entry
            px.execute(
                "delete from pgflight_cells.moved_ids where id = any (%s) and id >> %s = %s",
                [routed, cells.CELL_SHIFT, to_cell],
            )
            px.execute(
                "update pgflight_cells.moves set phase = 'switched', updated_at = clock_timestamp()"
                " where workspace = %s",
                [workspace],
            )
        report.routed_ids = len(routed)
        # the source: the rows go, a tombstone stays (the locks held until this commit)
        s.execute("set local session_replication_role = replica")
        _delete_rows(s, tables, params)
        s.execute(
            "insert into pgflight_cell.moved_out (workspace_id, name, to_cell) values (%s, %s, %s)"
            " on conflict (workspace_id) do update"
            " set to_cell = excluded.to_cell, moved_at = clock_timestamp()",
            [ws_id, workspace, to_cell],
        )
        s.commit()
    return True


def _delete_rows(
    conn: psycopg.Connection[tuple[object, ...]], tables: Sequence[MovedTable], params: dict[str, int]
) -> None:
    """Delete the workspace's rows, referencing tables first (a table's predicate reads its parents)."""
    for t in reversed(tables):
        conn.execute(
            sql.SQL("delete from pgflight.{} where {}").format(
                sql.Identifier(t.name),
                sql.SQL(t.predicate),
            ),
            params,
        )


def _finish_source(src: str, workspace: str, to_cell: int) -> None:
    """The source's side of a move cut off after the switch: delete what is left, leave the tombstone."""
    with psycopg.connect(src) as s:
        s.execute(MOVE_KIT.encode())
        row = s.execute("select id from pgflight.workspaces where name = %s", [workspace]).fetchone()
        if row is not None:
            params = {"ws": int(row[0])}
            s.execute("set local session_replication_role = replica")
            _delete_rows(s, moved_tables(s), params)
            s.execute(
                "insert into pgflight_cell.moved_out (workspace_id, name, to_cell) values (%s, %s, %s)"
                " on conflict (workspace_id) do nothing",
                [params["ws"], workspace, to_cell],
            )
        s.commit()


def _sequences_past(
    conn: psycopg.Connection[tuple[object, ...]], tables: Sequence[MovedTable], cell: int
) -> None:
    """
    Every copied id of the target cell's own range (a workspace moved back) is below the cell's
    sequence for it; raise MoveError otherwise (never seen: those ids were made by that sequence).
    """
    lo, hi = cells.cell_range(cell)
    for t in tables:
        if "id" not in t.columns:
            continue
        seq = conn.execute("select pg_get_serial_sequence(%s, 'id')", [f"pgflight.{t.name}"]).fetchone()
        if seq is None or seq[0] is None:
            continue
        top = conn.execute(
            sql.SQL("select max(id) from pgflight.{} where id between %s and %s").format(
                sql.Identifier(t.name)
            ),
            [lo, hi],
        ).fetchone()
        last = conn.execute(sql.SQL("select last_value from {}").format(sql.SQL(str(seq[0])))).fetchone()
        if top and top[0] is not None and last and int(top[0]) > int(last[0]):  # type: ignore[call-overload]
            raise MoveError(
                f"pgflight.{t.name}: copied id {top[0]} is past the target's sequence at {last[0]}"
            )
