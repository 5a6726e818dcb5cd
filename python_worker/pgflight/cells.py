"""
Cells: several ordinary pgflight databases behind one PL/Proxy database (docs/scaling.md).

A cell is a pgflight database deployed as usual, then numbered: every id sequence of the cell is
restarted at ``cell << CELL_SHIFT`` and capped below the next cell's range, so every bigint id and
fencing token the cell's API returns names its cell (``id >> CELL_SHIFT``), and tokens still
increase within the cell. A single database (no cells) keeps its ids as they are: cell 0.

The proxy database holds, in schema ``pgflight``, one function per worker, operator and reader API
function of a cell, with the same name, signature and grants, generated from the cell's catalogue:

- a function with ``p_workspace`` (or a workspace's ``p_name``) runs on the workspace's cell, from
  the directory ``pgflight_cells.workspaces``;
- a function addressed by an id (``p_attempt_id``, ``p_step_id``, ``p_run_id``, ``p_agent_run_id``)
  runs on the cell the id names, or where ``pgflight_cells.moved_ids`` says for an id that moved
  with its workspace (pgflight/cells_move.py);
- a batch over ``p_attempt_ids`` is split by element (PL/Proxy ``SPLIT``), each cell answering for
  its own elements;
- ``claim_batch`` rotates between the cells, skipping for a moment a cell that had nothing ready or
  did not answer; ``complete_and_claim`` is the proxy's claim then its complete_batch;
- ``register_worker`` takes an id from the proxy and registers the worker under it in every cell;
- everything else runs on every cell: a set is the union of the cells' rows, a single value the
  first cell's answer.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

#: The cell number sits in the bits above this one of every id: ``id = cell << 44 | local``.
#: 44 bits leave 17.6e12 ids of each kind per cell and keep every id of cells 1..255 below 2^53,
#: so JSON readers that parse numbers as doubles (JavaScript) still read them exactly.
CELL_SHIFT = 44
MAX_CELLS = 255
#: Sequences whose values are not ids the API returns (the claim's rotation counter).
NOT_ID_SEQUENCES = frozenset({"claim_turns"})
LANES = ("pgflight_worker", "pgflight_operator", "pgflight_reader")
#: The arguments, in order of preference, that address an object of one cell by its id.
ID_KEYS = ("p_attempt_id", "p_step_id", "p_run_id", "p_agent_run_id", "p_workspace_id")
#: Functions whose answer does not depend on the cell (the clock, a price table), or must be one
#: cell's for every worker of the proxy (a wake ticket's key: the workers of a ticket meet on it).
ANY_CELL = frozenset({"_now", "price_usd", "wake_ticket_key"})
#: Operator functions whose p_name is a workspace's name.
WORKSPACE_BY_NAME = frozenset({"create_workspace", "pause_workspace", "resume_workspace"})
#: Functions the proxy writes by hand (the rest follow the rules above).
CUSTOM = frozenset(
    {"register_worker", "deregister_worker", "claim_batch", "complete_and_claim", "create_workspace"}
)
CLUSTER = "pgflight_cells"
QUIET_S = 0.25  # a cell that had nothing ready is skipped this long by the session's claims
DOWN_S = 2.0  # a cell that did not answer is skipped this long


class CellsError(RuntimeError):
    """A cell deployment cannot be made as asked."""


def cell_of(id_: int) -> int:
    """The cell an id or fencing token names (0: a single database without cells)."""
    return id_ >> CELL_SHIFT


def cell_range(cell: int) -> tuple[int, int]:
    """The first and last id of `cell`'s range."""
    if not 1 <= cell <= MAX_CELLS:
        raise CellsError(f"cell number {cell} out of 1..{MAX_CELLS}")
    return (cell << CELL_SHIFT) + 1, ((cell + 1) << CELL_SHIFT) - 1


@dataclass(frozen=True)
class ApiFunction:
    """One function of a cell's API as the catalogue says it."""

    name: str
    arguments: str  # with defaults, as pg_get_function_arguments
    identity: str  # pg_get_function_identity_arguments
    result: str  # pg_get_function_result
    returns_set: bool
    inputs: tuple[tuple[str, str], ...]  # (name, type) of each input argument
    lanes: tuple[str, ...]  # the lane roles granted EXECUTE

    @property
    def returns_void(self) -> bool:
        return self.result == "void"

    @property
    def input_names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.inputs)


CATALOGUE_SQL = """
select p.proname, pg_get_function_arguments(p.oid), pg_get_function_identity_arguments(p.oid),
       pg_get_function_result(p.oid), p.proretset,
       coalesce((select array_agg(a.n order by a.i) from unnest(p.proargnames, p.proargmodes) with ordinality
                 a(n, m, i) where a.m in ('i', 'b', 'v')),
                p.proargnames[1:p.pronargs], '{}'),
       (select array_agg(format_type(t, null) order by i)
          from unnest(p.proargtypes::oid[]) with ordinality x(t, i)),
       (select array_agg(distinct g.rolname order by g.rolname) from aclexplode(p.proacl) e
          join pg_roles g on g.oid = e.grantee
         where g.rolname = any (%(lanes)s) and e.privilege_type = 'EXECUTE')
from pg_proc p
where p.pronamespace = 'pgflight'::regnamespace and p.prokind = 'f'
  and exists (select from aclexplode(p.proacl) e join pg_roles g on g.oid = e.grantee
              where g.rolname = any (%(lanes)s) and e.privilege_type = 'EXECUTE')
order by 1, 3
"""


def catalogue(conn: psycopg.Connection[tuple[object, ...]]) -> list[ApiFunction]:
    """The functions of schema pgflight that a lane may execute, in the database `conn` reaches."""
    out = []
    for name, args, ident, result, retset, names, types, lanes in conn.execute(
        CATALOGUE_SQL, {"lanes": list(LANES)}
    ).fetchall():
        names = list(names or [])  # type: ignore[call-overload]
        types = list(types or [])  # type: ignore[call-overload]
        out.append(
            ApiFunction(
                name=str(name),
                arguments=str(args),
                identity=str(ident),
                result=str(result),
                returns_set=bool(retset),
                inputs=tuple(zip(names, types, strict=True)),
                lanes=tuple(lanes or []),  # type: ignore[arg-type]
            )
        )
    return out


# --- cells ------------------------------------------------------------------------------------
def assign_cell(conn: psycopg.Connection[tuple[object, ...]], cell: int) -> None:
    """
    Number a freshly deployed cell: each id sequence restarts at its cell's range and ends below
    the next cell's. Refused for a database whose ids already left the range of another cell
    (a cell is numbered once, before its first run).
    """
    lo, hi = cell_range(cell)
    seqs = conn.execute(
        "select sequencename, coalesce(last_value, 0) from pg_sequences where schemaname = 'pgflight'"
        " order by 1"
    ).fetchall()
    for name, last in seqs:
        if name in NOT_ID_SEQUENCES:
            continue
        assert isinstance(last, int)
        if lo <= last <= hi:
            continue  # numbered already
        if last >= 1 << CELL_SHIFT:
            raise CellsError(f"sequence pgflight.{name} is at {last}: numbered for cell {cell_of(last)}")
        conn.execute(
            sql.SQL("alter sequence pgflight.{} maxvalue {} restart {}").format(
                sql.Identifier(str(name)), sql.Literal(hi), sql.Literal(lo)
            )
        )
    install_cell_kit(conn, cell)


CELL_KIT = """
create schema if not exists pgflight_cell authorization pgflight_owner;
revoke all on schema pgflight_cell from public;
grant usage on schema pgflight_cell to pgflight_worker, pgflight_operator, pgflight_reader;

create or replace function pgflight_cell.cell_number() returns integer
  language sql immutable
  set search_path = pg_catalog, pg_temp
  as $$ select {cell}::integer $$;
comment on function pgflight_cell.cell_number() is 'This cell''s number: the bits of every id above bit 44.';
grant execute on function pgflight_cell.cell_number() to pgflight_worker, pgflight_operator, pgflight_reader;

create or replace function pgflight_cell.register_worker_as(p_id bigint, p_name text, p_options jsonb)
  returns bigint
  language plpgsql security definer
  set search_path = pg_catalog, pg_temp
  as $$
declare
  v_last bigint;
  v_called boolean;
  v_id bigint;
begin
  if p_id is null or p_id < 1 or p_id >= (1::bigint << 44) then
    raise exception 'register_worker_as: the id must be a proxy''s worker id, in 1 .. 2^44 - 1'
      using errcode = '22023', detail = format('p_id = %s', coalesce(p_id::text, 'null')),
            hint = 'Register workers through the proxy database (docs/scaling.md).';
  end if;
  -- one at a time: the workers' sequence is pointed at the proxy's id for this call alone
  perform pg_advisory_xact_lock(hashtext('pgflight_cell.register_worker_as'));
  if exists (select from pgflight.workers w where w.id = p_id) then
    raise exception 'register_worker_as: worker id % is taken in this cell', p_id
      using errcode = '22023', detail = format('p_id = %s', p_id),
            hint = 'The proxy retries with its next id.';
  end if;
  select s.last_value, s.is_called into v_last, v_called from pgflight.workers_id_seq s;
  perform setval('pgflight.workers_id_seq', p_id, false);
  begin
    v_id := pgflight.register_worker(p_name, p_options);
  exception when others then
    perform setval('pgflight.workers_id_seq', v_last, v_called);
    raise;
  end;
  perform setval('pgflight.workers_id_seq', v_last, v_called);
  if v_id <> p_id then
    raise exception 'register_worker_as: a worker registered directly took id %', p_id
      using errcode = '22023', detail = format('p_id = %s, got %s', p_id, v_id),
            hint = 'Register workers through the proxy database (docs/scaling.md).';
  end if;
  return v_id;
end
$$;
alter function pgflight_cell.register_worker_as(bigint, text, jsonb) owner to pgflight_owner;
comment on function pgflight_cell.register_worker_as(bigint, text, jsonb) is
  'Register a worker of this login under the id the proxy chose (1 .. 2^44 - 1), so one worker id is '
  'valid in every cell; as register_worker otherwise. '
  'Errors: 22023 id out of range or taken, those of register_worker.';
revoke all on function pgflight_cell.register_worker_as(bigint, text, jsonb) from public;
grant execute on function pgflight_cell.register_worker_as(bigint, text, jsonb) to pgflight_worker;
"""


def install_cell_kit(conn: psycopg.Connection[tuple[object, ...]], cell: int) -> None:
    """The cell side of the proxy: its number and worker registration under a proxy's id."""
    conn.execute(CELL_KIT.replace("{cell}", str(int(cell))).encode())


# --- the proxy --------------------------------------------------------------------------------
def partitions(n: int) -> int:
    """PL/Proxy wants a power of two partitions: the cells, then copies of cell 1 never addressed."""
    p = 1
    while p < n:
        p *= 2
    return p


def libpq_keywords(dsn: str) -> str:
    """A cell's connection string for PL/Proxy: key=value, without user and password (the
    calling login's own, from its user mapping)."""
    params = {k: v for k, v in conninfo_to_dict(dsn).items() if k not in ("user", "password")}
    return make_conninfo("", **params)


def _args_list(fn: ApiFunction, first: int = 1) -> str:
    return ", ".join(f"${i}" for i in range(first, first + len(fn.inputs)))


def _select(fn: ApiFunction, first: int) -> str:
    call = f"pgflight.{fn.name}({_args_list(fn, first)})"
    if fn.returns_set and fn.result.startswith("TABLE("):
        return f"select * from {call}"
    return f"select {call}"


def _on_cell(fn: ApiFunction) -> str:
    """pgflight_cells.<name>(p_cell_part, ...args): the function on one partition."""
    return f"""
create function pgflight_via.{fn.name}(p_cell_part integer{", " if fn.arguments else ""}{fn.arguments})
  returns {fn.result}
  language plproxy as $plproxy$
    cluster '{CLUSTER}';
    run on $1;
    {_select(fn, 2)};
$plproxy$;"""


def route(fn: ApiFunction) -> str:
    """How the proxy runs `fn`: custom, workspace, id, split, any or all."""
    names = fn.input_names
    if fn.name in CUSTOM:
        return "custom"
    if "p_workspace" in names or (fn.name in WORKSPACE_BY_NAME and "p_name" in names):
        return "workspace"
    if any(k in names for k in ID_KEYS):
        return "id"
    if "p_attempt_ids" in names:
        return "split"
    if fn.name in ANY_CELL:
        return "any"
    return "all"


def _proxy_function(fn: ApiFunction) -> str:
    how = route(fn)
    head = f"create function pgflight.{fn.name}({fn.arguments}) returns {fn.result}"
    if how == "workspace":
        key = "p_workspace" if "p_workspace" in fn.input_names else "p_name"
        return _on_one_cell(fn, head, f"pgflight_cells.part_of_workspace({key})")
    if how == "id":
        key = next(k for k in ID_KEYS if k in fn.input_names)
        return _on_one_cell(fn, head, f"pgflight_cells.part_of_id({key})", key)
    if how == "split":
        return _as_cells_own(_split_function(fn, head))
    if how == "any":
        return _on_one_cell(fn, head, "0")
    if fn.name in MERGED_READS:
        return _as_cells_own(_merged_read(fn, head))
    return _as_cells_own(_on_every_cell(fn, head))


def _on_every_cell(fn: ApiFunction, head: str) -> str:
    # every cell, one after the other
    args = ", ".join(n for n in fn.input_names)
    call = f"pgflight_via.{fn.name}(c.part{', ' if args else ''}{args})"
    if fn.returns_set:
        loop = f"return query {_select_from(fn, call)};"
        tail = ""
    elif fn.returns_void:
        loop = f"perform {call};"
        tail = ""
    else:
        loop = f"if c.part = 0 then v_first := {call}; else perform {call}; end if;"
        tail = "return v_first;"
    decl = "declare c record;" + ("" if fn.returns_set or fn.returns_void else f" v_first {fn.result};")
    return f"""{head}
  language plpgsql
  set search_path = pg_catalog, pg_temp
  as $fn$
{decl}
begin
  for c in select x.cell - 1 as part from pgflight_cells.cells x order by x.cell loop
    {loop}
  end loop;
  {tail}
end
$fn$;"""


# --- a cell's error as the cell's own ------------------------------------------------------------
#: The handler every generated proxy function ends with: an error a cell raised reaches the caller
#: as that cell would have raised it (SQLSTATE, message, DETAIL, HINT without PL/Proxy's
#: "f(n): [db] REMOTE ERROR:" and "Remote detail:" prefixes, which name the cell's database); a
#: cell that does not answer is 08006 naming no server; an id that names no cell of this proxy
#: gets a DETAIL saying so and a HINT (`{hole}`: the SQL text of that id's description, or null).
CELLS_OWN_ERROR = """
exception when others then
  declare
    v_detail text;
    v_hint text;
  begin
    get stacked diagnostics v_detail = pg_exception_detail, v_hint = pg_exception_hint;
    perform pgflight_cells.reraise(sqlstate, sqlerrm, nullif(v_detail, ''), nullif(v_hint, ''), {hole});
  end;
end
$fn$;"""

PROXY_ERRORS = """
create or replace function pgflight_cells.hole(p_key text, p_id bigint) returns text
  language sql stable
  set search_path = pg_catalog, pg_temp
  as $$
    -- null: the id names a cell of this proxy (or is null, which the cell refuses itself)
    select case when p_id is null
                  or exists (select from pgflight_cells.cells c where c.cell = p_id >> {shift}) then null
                else format('%s = %s names cell %s; this proxy''s cells are %s', p_key, p_id, p_id >> {shift},
                            (select coalesce(string_agg(c.cell::text, ', ' order by c.cell), 'none')
                               from pgflight_cells.cells c))
           end
  $$;
comment on function pgflight_cells.hole(text, bigint) is
  'Why an id routes nowhere (its bits above {shift} name no cell of this proxy), or null.';

create or replace function pgflight_cells.reraise(p_state text, p_message text, p_detail text, p_hint text,
                                                  p_hole text default null)
  returns void
  language plpgsql
  set search_path = pg_catalog, pg_temp
  as $$
declare
  v_remote boolean := p_message ~ 'REMOTE ERROR: ';
  v_message text := regexp_replace(p_message, '^.*?REMOTE ERROR: ', '');
  v_detail text := regexp_replace(p_detail, '^Remote detail: ', '');
  v_hint text := regexp_replace(p_hint, '^Remote hint: ', '');
begin
  if p_state = 'XX000' and not v_remote then
    -- PL/Proxy's own failure: the cell's server did not answer (its text names the server)
    raise exception using errcode = '08006', message = 'a cell of the proxy does not answer',
      detail = coalesce(p_hole, 'the call''s cell is down or refuses the proxy''s connection'),
      hint = 'Retry later; the other cells carry on. Check the cell''s server and the proxy''s user mapping '
             '(docs/scaling.md).';
  end if;
  if p_hole is not null then
    v_detail := concat_ws('; ', v_detail, p_hole);
    v_hint := coalesce(v_hint, 'Pass an id an API call returned: its bits above bit {shift} name its cell.');
  end if;
  if v_detail is null and v_hint is null then
    raise exception using errcode = p_state, message = v_message;
  elsif v_hint is null then
    raise exception using errcode = p_state, message = v_message, detail = v_detail;
  elsif v_detail is null then
    raise exception using errcode = p_state, message = v_message, hint = v_hint;
  end if;
  raise exception using errcode = p_state, message = v_message, detail = v_detail, hint = v_hint;
end
$$;
comment on function pgflight_cells.reraise(text, text, text, text, text) is
  'Raise a cell''s error as the cell raised it (PL/Proxy''s prefixes removed); '
  '08006 for a cell that does not answer.';
grant execute on function pgflight_cells.hole(text, bigint),
                          pgflight_cells.reraise(text, text, text, text, text)
  to pgflight_worker, pgflight_operator, pgflight_reader;
"""


def _as_cells_own(function_sql: str, hole: str = "null") -> str:
    """A generated PL/pgSQL proxy function (ending `end $fn$;`) with the CELLS_OWN_ERROR handler."""
    tail = "\nend\n$fn$;"
    assert function_sql.endswith(tail), function_sql[-40:]
    return function_sql[: -len(tail)] + CELLS_OWN_ERROR.replace("{hole}", hole)


def _on_one_cell(fn: ApiFunction, head: str, part: str, key: str | None = None) -> str:
    """`fn` on the one cell `part` (SQL giving a partition) names, its errors as the cell's own."""
    args = ", ".join(fn.input_names)
    call = f"pgflight_via.{fn.name}({part}{', ' if args else ''}{args})"
    if fn.returns_set:
        body = f"return query {_select_from(fn, call)};"
    elif fn.returns_void:
        body = f"perform {call};"
    else:
        body = f"return {call};"
    hole = f"pgflight_cells.hole({_literal(key)}, {key})" if key else "null"
    return _as_cells_own(
        f"""{head}
  language plpgsql
  set search_path = pg_catalog, pg_temp
  as $fn$
#variable_conflict use_variable
begin
  {body}
end
$fn$;""",
        hole,
    )


#: What a batch answers for an element whose cell does not answer, by result column.
DOWN_ANSWER = {"status": "'lease_lost'::text", "outcome": "'lease_lost'::text"}


def _split_function(fn: ApiFunction, head: str) -> str:
    """
    A batch over attempt ids: each cell's elements in one call to that cell, in cell order; the
    elements of a cell that does not answer are answered as lost (their leases lapse there and
    are reclaimed), so the other cells' elements are answered as usual. Arrays of unequal lengths,
    a null or an empty array go to cell 1 unchanged, which refuses them as one database would.
    """
    arrays = [n for n, t in fn.inputs if t.endswith("[]") and n != "p_recipes"]
    picked = {
        n: f"array(select {n}[u.i] from unnest(v_idx) with ordinality u(i, o) order by u.o)" for n in arrays
    }
    args = ", ".join(picked.get(n, n) for n in fn.input_names)
    whole = ", ".join(fn.input_names)
    cols = [c.split(" ", 1) for c in fn.result.removeprefix("TABLE(").removesuffix(")").split(", ")]
    down = ", ".join(
        "p_attempt_ids[u.i]" if c == "attempt_id" else DOWN_ANSWER.get(c, f"null::{t}") for c, t in cols
    )
    same = " or ".join(f"cardinality({n}) is distinct from cardinality(p_attempt_ids)" for n in arrays)
    return f"""{head}
  language plpgsql
  set search_path = pg_catalog, pg_temp
  as $fn$
#variable_conflict use_variable
declare
  v_part integer;
  v_idx integer[];
begin
  if coalesce(cardinality(p_attempt_ids), 0) = 0 or {same} then
    return query select * from pgflight_via.{fn.name}(0, {whole});
    return;
  end if;
  for v_part in select distinct pgflight_cells.part_of_id(x.id) from unnest(p_attempt_ids) x(id) order by 1
  loop
    v_idx := array(select g.i from generate_subscripts(p_attempt_ids, 1) g(i)
                    where pgflight_cells.part_of_id(p_attempt_ids[g.i]) = v_part order by g.i);
    begin
      return query select * from pgflight_via.{fn.name}(v_part, {args});
    exception when sqlstate 'XX000' then
      return query select {down} from unnest(v_idx) u(i);
    end;
  end loop;
end
$fn$;"""


# --- reads across cells in one order ------------------------------------------------------------
#: Reads of every cell that an operator view pages or lists: the cells' rows merged in the
#: function's own order and cut at its own limit (name: order over the result columns `x.`, the
#: limit argument or None), so a page through the proxy is the page one database would give.
MERGED_READS: dict[str, tuple[str, str | None]] = {
    "run_list_page": ("x.run_id desc", "p_limit"),
    "dead_letter_page": ("x.attempt_id desc", "p_limit"),
    "agent_runs_by_status": ("x.agent_run_id", "p_limit"),
    "pending_approvals": ("x.requested_at, x.step_id", "p_limit"),
    "worker_list": ("x.last_seen_at desc, x.worker_id desc", "p_limit"),
    "cost_by_day": ("x.day desc, x.workspace", None),
    "queue_depths": ("x.workspace, x.recipe", None),
}

#: worker_list: a worker registered through the proxy has a row in every cell; it is listed once,
#: seen when any cell last heard from it, stopped when every cell says so, holding what each holds.
WORKER_LIST_MERGE = """
  with x as (select w.* from pgflight_cells.cells c
                  cross join lateral pgflight_via.worker_list(c.cell - 1, p_limit) w)
  select x.worker_id, min(x.name), min(x.hostname), min(x.pid),
         (select x3.recipes from x x3 where x3.worker_id = x.worker_id limit 1),
         min(x.started_at), max(x.last_seen_at),
         case when bool_and(x.stopped_at is not null) then max(x.stopped_at) end, bool_or(x.alive),
         coalesce((select jsonb_agg(e.h order by (e.h ->> 'attempt_id')::bigint)
                     from x x2 cross join lateral jsonb_array_elements(coalesce(x2.held, '[]')) e(h)
                    where x2.worker_id = x.worker_id), '[]'::jsonb)
    from x group by x.worker_id
   order by max(x.last_seen_at) desc, x.worker_id desc
   limit p_limit"""


def _merged_read(fn: ApiFunction, head: str) -> str:
    """A read of every cell (MERGED_READS): one query over the cells, in the function's order."""
    order, limit = MERGED_READS[fn.name]
    args = ", ".join(fn.input_names)
    if fn.name == "worker_list":
        query = WORKER_LIST_MERGE
    else:
        query = f"""
  select x.* from pgflight_cells.cells c
   cross join lateral pgflight_via.{fn.name}(c.cell - 1{", " if args else ""}{args}) x
   order by {order}{f" limit {limit}" if limit else ""}"""
    return f"""{head}
  language plpgsql
  set search_path = pg_catalog, pg_temp
  as $fn$
#variable_conflict use_column
begin
  return query{query};
end
$fn$;"""


def _select_from(fn: ApiFunction, call: str) -> str:
    return f"select * from {call}" if fn.result.startswith("TABLE(") else f"select {call}"


PROXY_BASE = """
create extension if not exists plproxy;
drop schema if exists pgflight cascade;
drop schema if exists pgflight_via cascade;
create schema pgflight;
create schema pgflight_via;
comment on schema pgflight_via is 'Generated: each API function on one cell, by partition (cell - 1).';
create schema if not exists pgflight_cells;
create table if not exists pgflight_cells.cells (
  cell integer primary key check (cell between 1 and {max_cells}),
  connstr text not null
);
comment on table pgflight_cells.cells is
  'The cells behind this proxy: number (the bits of every id above bit 44), connection string without login.';
create table if not exists pgflight_cells.workspaces (
  name text primary key,
  cell integer not null references pgflight_cells.cells
);
comment on table pgflight_cells.workspaces is 'The directory: the cell of each workspace.';
create sequence if not exists pgflight_cells.worker_ids minvalue 1 maxvalue {max_worker};
comment on sequence pgflight_cells.worker_ids is
  'Worker ids valid in every cell (below every cell''s own range).';
create table if not exists pgflight_cells.workers (
  id bigint primary key,
  login name not null default session_user,
  name text,
  options jsonb
);
comment on table pgflight_cells.workers is
  'Workers registered through the proxy: registered in a cell that was down then on their first claim there.';
revoke all on pgflight_cells.workers from public;
create index if not exists workers_login_idx on pgflight_cells.workers (login);
create table if not exists pgflight_cells.settings (
  only_row boolean primary key default true check (only_row),
  max_live_workers_per_login integer not null default 1000 check (max_live_workers_per_login > 0)
);
comment on table pgflight_cells.settings is
  'The proxy''s own caps (one row): max_live_workers_per_login, taken from cell 1''s settings at deploy.';
insert into pgflight_cells.settings default values on conflict do nothing;
revoke all on pgflight_cells.settings from public;
drop function if exists pgflight_cells.remember_worker(bigint, text, jsonb);
-- A login's next worker id, remembered with its name and options: refused (ZF005, no id taken)
-- when the login already has max_live_workers_per_login workers registered through the proxy and
-- not deregistered. One registration of a login at a time (a transaction lock on its name), so
-- concurrent calls cannot overshoot the cap.
create or replace function pgflight_cells.remember_worker(p_name text, p_options jsonb)
  returns bigint language plpgsql security definer
  set search_path = pg_catalog, pg_temp
  as $$
declare
  v_cap integer := (select s.max_live_workers_per_login from pgflight_cells.settings s);
  v_live bigint;
  v_id bigint;
begin
  perform pg_advisory_xact_lock(hashtext('pgflight_cells.remember_worker'), hashtext(session_user));
  select count(*) into v_live from pgflight_cells.workers w where w.login = session_user;
  if v_live >= v_cap then
    raise exception 'register_worker: login % has % workers registered through the proxy',
                    session_user, v_live
      using errcode = 'ZF005',
            detail = format('settings max_live_workers_per_login = %s (proxy), live = %s, asked = 1',
                            v_cap, v_live),
            hint = 'Deregister workers that stopped (deregister_worker), or raise '
                   'pgflight_cells.settings.max_live_workers_per_login on the proxy.';
  end if;
  v_id := nextval('pgflight_cells.worker_ids');
  insert into pgflight_cells.workers (id, login, name, options)
  values (v_id, session_user, p_name, p_options);
  return v_id;
end
$$;
create or replace function pgflight_cells.forget_worker(p_id bigint)
  returns void language sql security definer
  set search_path = pg_catalog, pg_temp
  as $$ delete from pgflight_cells.workers w where w.id = p_id and w.login = session_user $$;
comment on function pgflight_cells.forget_worker(bigint) is
  'A deregistered worker of this login leaves the proxy''s list (and its cap count).';
create or replace function pgflight_cells.worker_of(p_id bigint)
  returns table (name text, options jsonb) language sql stable security definer
  set search_path = pg_catalog, pg_temp
  as $$ select w.name, w.options from pgflight_cells.workers w
        where w.id = p_id and w.login = session_user $$;
revoke all on function pgflight_cells.remember_worker(text, jsonb), pgflight_cells.worker_of(bigint),
                       pgflight_cells.forget_worker(bigint) from public;
grant execute on function pgflight_cells.remember_worker(text, jsonb), pgflight_cells.worker_of(bigint),
                          pgflight_cells.forget_worker(bigint) to pgflight_worker;
grant usage on schema pgflight, pgflight_cells, pgflight_via
  to pgflight_worker, pgflight_operator, pgflight_reader;
-- the directory is read through part_of_workspace alone: a login learns no other tenant's names
revoke all on pgflight_cells.workspaces from public;
grant select on pgflight_cells.cells to pgflight_worker, pgflight_operator, pgflight_reader;
revoke all on sequence pgflight_cells.worker_ids from pgflight_worker;  -- taken by remember_worker alone

-- moving workspaces between cells (pgflight/cells_move.py): the ids that left the cell they name,
-- the workspaces being moved (their calls refused meanwhile), and the moves' journal
create table if not exists pgflight_cells.moved_ids (
  id bigint primary key,
  cell integer not null references pgflight_cells.cells
);
comment on table pgflight_cells.moved_ids is
  'Ids (workspace, run, step, attempt, agent run) whose rows live in another cell than the one they name.';
revoke all on pgflight_cells.moved_ids from public;
create table if not exists pgflight_cells.moves (
  workspace text primary key,
  from_cell integer not null references pgflight_cells.cells,
  to_cell integer not null references pgflight_cells.cells,
  phase text not null constraint phase_is_known
    check (phase in ('pausing', 'draining', 'frozen', 'copied', 'switched')),
  paused_by_move boolean not null default false,
  started_at timestamptz not null default clock_timestamp(),
  updated_at timestamptz not null default clock_timestamp()
);
comment on table pgflight_cells.moves is
  'Moves in progress (one row per workspace until it is done); a frozen workspace is refused.';
revoke all on pgflight_cells.moves from public;
-- wake-ups relayed from the cells (pgflight/cells_wake.py): when each cell last announced work
create unlogged table if not exists pgflight_cells.wakes (
  cell integer primary key references pgflight_cells.cells on delete cascade,
  at double precision not null
);
comment on table pgflight_cells.wakes is
  'The relay''s last wake-up from each cell (epoch seconds): a claim visits a cell marked quiet before it.';
revoke all on pgflight_cells.wakes from public;

create or replace function pgflight_cells.part_of_id(p_id bigint) returns integer
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
  as $$
    -- an id moved with its workspace lives where the moved ids say; else in the cell it names; an id
    -- of no cell (null, negative, a single database's) goes to cell 1, which answers it as unknown
    select coalesce((select m.cell - 1 from pgflight_cells.moved_ids m where m.id = p_id),
                    (select c.cell - 1 from pgflight_cells.cells c where c.cell = p_id >> {shift}), 0)
  $$;
create or replace function pgflight_cells.part_of_workspace(p_name text) returns integer
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
  as $$
begin
  if exists (select from pgflight_cells.moves m
             where m.workspace = p_name and m.phase in ('frozen', 'copied')) then
    raise exception 'workspace % is moving between cells', p_name using errcode = 'ZF014',
      detail = format('workspace=%s', p_name),
      hint = 'Retry in a moment: its rows are being copied to its new cell (docs/scaling.md).';
  end if;
  -- a workspace not in the directory: a cell chosen by its name answers it as unknown
  return coalesce((select w.cell - 1 from pgflight_cells.workspaces w where w.name = p_name),
                  (abs(hashtext(coalesce(p_name, '')))
                   % (select count(*) from pgflight_cells.cells))::integer);
end
$$;
create or replace function pgflight_cells.skipped(p_part integer, p_now double precision) returns boolean
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
  as $$
    -- this session marked the cell quiet (or down) until a moment still to come, and the relay
    -- has not heard of new work in it since the mark
    select coalesce(nullif(current_setting('pgflight_cells.quiet_' || p_part, true), ''), '0')::float8 > p_now
       and coalesce((select w.at from pgflight_cells.wakes w where w.cell = p_part + 1), 0)
           < coalesce(nullif(current_setting('pgflight_cells.marked_' || p_part, true), ''), '0')::float8
  $$;
create or replace function pgflight_cells.mark_quiet(p_part integer, p_now double precision,
                                                     p_for double precision)
  returns void language sql
  set search_path = pg_catalog, pg_temp
  as $$
    select set_config('pgflight_cells.marked_' || p_part, p_now::text, false),
           set_config('pgflight_cells.quiet_' || p_part, (p_now + p_for)::text, false)
  $$;
revoke all on function pgflight_cells.skipped(integer, double precision),
                       pgflight_cells.mark_quiet(integer, double precision, double precision) from public;
grant execute on function pgflight_cells.skipped(integer, double precision),
                          pgflight_cells.mark_quiet(integer, double precision, double precision)
  to pgflight_worker;
create or replace function pgflight_cells.place(p_name text) returns integer
  language plpgsql security definer
  set search_path = pg_catalog, pg_temp
  as $$
declare
  v_cell integer;
begin
  if p_name is null then
    raise exception 'create_workspace: the name is null' using errcode = '22023',
      detail = 'p_name = null', hint = 'Pass a workspace name.';
  end if;
  select w.cell into v_cell from pgflight_cells.workspaces w where w.name = p_name;
  if v_cell is null then
    -- the cell with the fewest workspaces
    select c.cell into v_cell from pgflight_cells.cells c
      order by (select count(*) from pgflight_cells.workspaces w where w.cell = c.cell), c.cell limit 1;
    insert into pgflight_cells.workspaces (name, cell) values (p_name, v_cell) on conflict (name) do nothing;
    select w.cell into v_cell from pgflight_cells.workspaces w where w.name = p_name;
  end if;
  return v_cell;
end
$$;
revoke all on function pgflight_cells.place(text) from public;
grant execute on function pgflight_cells.place(text) to pgflight_operator;
create or replace function pgflight_cells.register_worker_as(p_cell_part integer, p_id bigint, p_name text,
                                                             p_options jsonb)
  returns bigint language plproxy as $plproxy$
    cluster '{cluster}'; run on $1; select pgflight_cell.register_worker_as($2, $3, $4);
$plproxy$;
"""

PROXY_CUSTOM = """
create function pgflight.register_worker(p_name text, p_options jsonb default '{{}}'::jsonb) returns bigint
  language plpgsql
  set search_path = pg_catalog, pg_temp
  as $fn$
declare
  v_id bigint;
  v_try integer;
  v_cells integer := 0;
  c record;
begin
  for v_try in 1 .. 3 loop
    begin
      v_id := pgflight_cells.remember_worker(p_name, p_options);
      for c in select x.cell - 1 as part from pgflight_cells.cells x order by x.cell loop
        begin
          perform pgflight_cells.register_worker_as(c.part, v_id, p_name, p_options);
          v_cells := v_cells + 1;
        exception when sqlstate 'XX000' then
          null;  -- a cell that does not answer: registered there on the first claim in it
        end;
      end loop;
      if v_cells = 0 then
        raise exception 'register_worker: no cell answers' using errcode = '08006',
          detail = format('%s cells', (select count(*) from pgflight_cells.cells)),
          hint = 'Check the cells'' servers and the proxy''s user mapping.';
      end if;
      return v_id;
    exception when sqlstate '22023' or unique_violation then
      -- an id taken (by a worker login's own call of register_worker_as): the next one
      if v_try = 3 or (sqlstate = '22023' and sqlerrm not like '%is taken in this cell%') then
        raise;
      end if;
    end;
  end loop;
end
$fn$;

create function pgflight.deregister_worker(p_worker_id bigint) returns void
  language plpgsql
  set search_path = pg_catalog, pg_temp
  as $fn$
declare
  c record;
  v_done integer := 0;
begin
  for c in select x.cell - 1 as part from pgflight_cells.cells x order by x.cell loop
    begin
      perform pgflight_via.deregister_worker(c.part, p_worker_id);
      v_done := v_done + 1;
    exception when sqlstate 'ZF010' or sqlstate 'XX000' then
      null;  -- never registered in that cell (it was down), or down now: the row there ages out
    end;
  end loop;
  if v_done = 0 then
    perform pgflight_via.deregister_worker(0, p_worker_id);  -- an unknown worker: cell 1's error
  end if;
  perform pgflight_cells.forget_worker(p_worker_id);
end
$fn$;

create function pgflight.create_workspace(p_name text, p_options jsonb default '{{}}'::jsonb) returns bigint
  language plpgsql
  set search_path = pg_catalog, pg_temp
  as $fn$
begin
  if p_name is not null then  -- a null name: the cell refuses it as it would (22023, or ZF012 first)
    perform pgflight_cells.place(p_name);
  end if;
  return pgflight_via.create_workspace(pgflight_cells.part_of_workspace(p_name), p_name, p_options);
end
$fn$;

create function pgflight.claim_batch(p_worker_id bigint, p_batch_size integer, p_lease_s double precision,
                                     p_recipes text[] default null::text[],
                                     p_options jsonb default '{{}}'::jsonb)
  returns table(attempt_id bigint, fencing_token bigint, step_id bigint, run_id bigint, parent_id bigint,
                step_key text, attempt_no integer, recipe text, input jsonb,
                lease_expires_at timestamp with time zone, deadline_at timestamp with time zone)
  language plpgsql
  set search_path = pg_catalog, pg_temp
  as $fn$
declare
  v_parts integer[] := array(select c.cell - 1 from pgflight_cells.cells c order by c.cell);
  v_n integer := cardinality(v_parts);
  v_turn integer := coalesce(nullif(current_setting('pgflight_cells.turn', true), '')::integer, 0);
  v_now double precision := extract(epoch from clock_timestamp());
  v_part integer;
  v_got integer := 0;
  v_rows integer;
  i integer;
begin
  -- rotation between the cells, one step further each call; a cell that had nothing ready is
  -- skipped by this session for {quiet_s} s, one that did not answer for {down_s} s, unless the wake
  -- relay heard of new work in it since (pgflight_cells.skipped)
  for i in 0 .. v_n - 1 loop
    v_part := v_parts[(v_turn + i) % v_n + 1];
    continue when pgflight_cells.skipped(v_part, v_now);
    begin
      begin
        return query select * from pgflight_via.claim_batch(v_part, p_worker_id, p_batch_size - v_got,
                                                              p_lease_s, p_recipes, p_options);
      exception when sqlstate 'ZF010' then
        -- registered through the proxy while this cell was down: registered here now, then claims
        perform pgflight_cells.register_worker_as(v_part, p_worker_id, w.name, w.options)
          from pgflight_cells.worker_of(p_worker_id) w;
        if not found then
          raise;
        end if;
        return query select * from pgflight_via.claim_batch(v_part, p_worker_id, p_batch_size - v_got,
                                                              p_lease_s, p_recipes, p_options);
      end;
      get diagnostics v_rows = row_count;
    exception when sqlstate '08000' or sqlstate '08001' or sqlstate '08003' or sqlstate '08006'
                   or sqlstate '57P01' or sqlstate 'XX000' then
      perform pgflight_cells.mark_quiet(v_part, v_now, {down_s});
      continue;
    end;
    if v_rows = 0 then
      perform pgflight_cells.mark_quiet(v_part, v_now, {quiet_s});
    end if;
    v_got := v_got + v_rows;
    exit when v_got >= p_batch_size;
  end loop;
  perform set_config('pgflight_cells.turn', ((v_turn + 1) % greatest(v_n, 1))::text, false);
end
$fn$;

create function pgflight.complete_and_claim(p_worker_id bigint, p_attempt_ids bigint[], p_tokens bigint[],
                                            p_results jsonb[], p_batch_size integer,
                                            p_lease_s double precision, p_recipes text[] default null::text[],
                                            p_options jsonb default '{{}}'::jsonb)
  returns table(attempt_id bigint, fencing_token bigint, step_id bigint, run_id bigint, parent_id bigint,
                step_key text, attempt_no integer, recipe text, input jsonb,
                lease_expires_at timestamp with time zone, deadline_at timestamp with time zone, outcome text)
  language plpgsql
  set search_path = pg_catalog, pg_temp
  as $fn$
begin
  -- not one transaction across cells: the completions are each cell's, then the claim
  return query select b.attempt_id, null::bigint, null::bigint, null::bigint, null::bigint, null::text,
                      null::integer, null::text, null::jsonb, null::timestamptz, null::timestamptz, b.outcome
                 from pgflight.complete_batch(p_attempt_ids, p_tokens, p_results) b;
  return query select c.*, null::text
                 from pgflight.claim_batch(p_worker_id, p_batch_size, p_lease_s, p_recipes, p_options) c;
end
$fn$;
"""


@dataclass(frozen=True)
class ApiView:
    """A view or table of schema pgflight (`lanes`: the lane roles that may read it)."""

    name: str
    columns: tuple[tuple[str, str], ...]  # (name, type)
    lanes: tuple[str, ...]


VIEWS_SQL = """
select c.relname,
       array_agg(a.attname::text order by a.attnum),
       array_agg(format_type(a.atttypid, a.atttypmod) order by a.attnum),
       (select array_agg(distinct g.rolname::text order by g.rolname::text) from aclexplode(c.relacl) e
          join pg_roles g on g.oid = e.grantee
         where g.rolname = any (%(lanes)s) and e.privilege_type = 'SELECT')
from pg_class c
join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
where c.relnamespace = 'pgflight'::regnamespace and c.relkind in ('v', 'r', 'p', 'm') and not c.relispartition
group by c.oid, c.relname
order by 1
"""


def views(conn: psycopg.Connection[tuple[object, ...]]) -> list[ApiView]:
    """The views and tables of schema pgflight, in the database `conn` reaches."""
    out = []
    for name, cols, types, lanes in conn.execute(VIEWS_SQL, {"lanes": list(LANES)}).fetchall():
        out.append(
            ApiView(
                name=str(name),
                columns=tuple(zip(cols, types, strict=True)),  # type: ignore[call-overload]
                lanes=tuple(lanes or []),  # type: ignore[arg-type]
            )
        )
    return out


def _proxy_view(v: ApiView, cell_count: int) -> str:
    """
    A relation a lane reads: a view of the union of every cell's rows, each cell's read as the
    calling login. One no lane reads: an empty table of the same shape, so a lane's read is
    refused with 42501 as in a cell (the command line tells that from a missing schema).
    """
    q = sql_ident
    if not v.lanes:
        cols = ", ".join(f"{q(n)} {t}" for n, t in v.columns)
        return f"create table pgflight.{q(v.name)} ({cols});\nrevoke all on pgflight.{q(v.name)} from public;"
    cols = ", ".join(f"{q(n)} {t}" for n, t in v.columns)
    union = "\n  union all ".join(f"select * from pgflight_via.{q(v.name)}({i})" for i in range(cell_count))
    grants = "\n".join(f"grant select on pgflight.{q(v.name)} to {lane};" for lane in v.lanes)
    return f"""
create function pgflight_via.{q(v.name)}(p_cell_part integer) returns table({cols})
  language plproxy as $plproxy$
    cluster '{CLUSTER}';
    run on $1;
    select * from pgflight.{q(v.name)};
$plproxy$;
create view pgflight.{q(v.name)} as
  {union};
comment on view pgflight.{q(v.name)} is 'Proxy of the cells: every cell''s rows (each read whole).';
{grants}"""


def sql_ident(name: str) -> str:
    """`name` as a quoted SQL identifier, quoted by psycopg (no connection needed)."""
    return sql.Identifier(name).as_string(None)


def proxy_schema(fns: Sequence[ApiFunction], cell_count: int, vws: Sequence[ApiView] = ()) -> str:
    """The SQL of the proxy's functions (and views) for the catalogue `fns` (the base schema excluded)."""
    custom = PROXY_CUSTOM.format(quiet_s=QUIET_S, down_s=DOWN_S)
    parts = [custom.replace("\nend\n$fn$;", CELLS_OWN_ERROR.replace("{hole}", "null"))]
    parts += [_proxy_view(v, cell_count) for v in vws]
    parts.append(PROXY_ERRORS.replace("{shift}", str(CELL_SHIFT)))
    for fn in fns:
        if route(fn) != "custom" or fn.name in ("claim_batch", "create_workspace", "deregister_worker"):
            parts.append(_on_cell(fn))
        if route(fn) != "custom":
            parts.append(_proxy_function(fn))
    for fn in fns:
        sig = f"pgflight.{fn.name}({fn.identity})"
        parts.append(f"revoke all on function {sig} from public;")
        for lane in fn.lanes:
            parts.append(f"grant execute on function {sig} to {lane};")
        parts.append(f"comment on function {sig} is {_literal(f'Proxy of the cells: {route(fn)}.')};")
    return "\n".join(parts)


def _literal(s: str) -> str:
    """`s` as an SQL string literal, quoted by psycopg."""
    return sql.Literal(s).as_string(None)


def deploy_proxy(proxy_dsn: str, cell_dsns: Sequence[str]) -> None:
    """Write the proxy database `proxy_dsn` for the (numbered) cells `cell_dsns` (cell 1 first)."""
    if not cell_dsns or len(cell_dsns) > MAX_CELLS:
        raise CellsError(f"1 .. {MAX_CELLS} cells, got {len(cell_dsns)}")
    with psycopg.connect(cell_dsns[0], autocommit=True) as c:
        fns = catalogue(c)
        vws = views(c)
        caps = c.execute("select max_live_workers_per_login from pgflight.settings").fetchone()
    connstrs = [libpq_keywords(d) for d in cell_dsns]
    pads = [
        f"{connstrs[0]} application_name=pgflight_cells_pad_{i}"
        for i in range(len(connstrs), partitions(len(connstrs)))
    ]
    with psycopg.connect(proxy_dsn) as c:
        for role in LANES:
            if not c.execute("select 1 from pg_roles where rolname = %s", [role]).fetchone():
                c.execute(sql.SQL("create role {} nologin").format(sql.Identifier(role)))
        base = PROXY_BASE.format(
            max_cells=MAX_CELLS, shift=CELL_SHIFT, cluster=CLUSTER, max_worker=(1 << CELL_SHIFT) - 1
        )
        c.execute(base.encode())
        mappings = saved_user_mappings(c)
        c.execute(sql.SQL("drop server if exists {} cascade").format(sql.Identifier(CLUSTER)))
        options = sql.SQL(", ").join(
            sql.SQL("p{} {}").format(sql.SQL(str(i)), sql.Literal(s)) for i, s in enumerate(connstrs + pads)
        )
        c.execute(
            sql.SQL("create server {} foreign data wrapper plproxy options ({})").format(
                sql.Identifier(CLUSTER), options
            )
        )
        c.execute(sql.SQL("create user mapping for public server {}").format(sql.Identifier(CLUSTER)))
        restore_user_mappings(c, mappings)
        c.execute(
            sql.SQL("grant usage on foreign server {} to {}").format(
                sql.Identifier(CLUSTER), sql.SQL(", ").join(sql.Identifier(r) for r in LANES)
            )
        )
        c.execute("delete from pgflight_cells.cells where cell > %s", [len(connstrs)])
        for i, s in enumerate(connstrs, 1):
            c.execute(
                "insert into pgflight_cells.cells values (%s, %s) on conflict (cell) do update"
                " set connstr = excluded.connstr",
                [i, s],
            )
        c.execute(proxy_schema(fns, len(connstrs), vws).encode())
        if caps is not None:
            c.execute("update pgflight_cells.settings set max_live_workers_per_login = %s", [caps[0]])


def saved_user_mappings(c: psycopg.Connection[tuple[object, ...]]) -> list[tuple[str, dict[str, str]]]:
    """The logins' user mappings of the cells' server (`map_login`), kept across a redeploy."""
    rows = c.execute(
        "select usename::text, coalesce(umoptions, '{}') from pg_user_mappings"
        " where srvname = %s and usename <> 'public'",
        [CLUSTER],
    ).fetchall()
    out = []
    for login, opts in rows:
        pairs = [str(o).partition("=") for o in opts]  # type: ignore[attr-defined]
        out.append((str(login), {k: v for k, _, v in pairs}))
    return out


def restore_user_mappings(
    c: psycopg.Connection[tuple[object, ...]], mappings: Sequence[tuple[str, dict[str, str]]]
) -> None:
    """Make again the user mappings `saved_user_mappings` read (the server was dropped and made anew)."""
    for login, opts in mappings:
        options = sql.SQL(", ").join(
            sql.SQL("{} {}").format(sql.Identifier(k), sql.Literal(v)) for k, v in opts.items()
        )
        c.execute(
            sql.SQL("create user mapping for {} server {}{}").format(
                sql.Identifier(login),
                sql.Identifier(CLUSTER),
                sql.SQL(" options ({})").format(options) if opts else sql.SQL(""),
            )
        )


def map_login(proxy_dsn: str, login: str, password: str) -> None:
    """The password the proxy gives the cells for `login` (else the cells' pg_hba decides)."""
    with psycopg.connect(proxy_dsn, autocommit=True) as c:
        c.execute(
            sql.SQL("drop user mapping if exists for {} server {}").format(
                sql.Identifier(login), sql.Identifier(CLUSTER)
            )
        )
        c.execute(
            sql.SQL("create user mapping for {} server {} options (user {}, password {})").format(
                sql.Identifier(login), sql.Identifier(CLUSTER), sql.Literal(login), sql.Literal(password)
            )
        )


def place(proxy_dsn: str, workspace: str, cell: int) -> None:
    """Put `workspace` in `cell` in the directory, before it is created (cells_move moves one)."""
    with psycopg.connect(proxy_dsn, autocommit=True) as c:
        c.execute(
            "insert into pgflight_cells.workspaces (name, cell) values (%s, %s)"
            " on conflict (name) do update set cell = excluded.cell",
            [workspace, cell],
        )


def deploy(
    cell_dsns: Sequence[str], proxy_dsn: str, *, migrate_cells: bool = True, schedule: bool = True
) -> dict[int, str | None]:
    """
    Deploy pgflight in each cell (unless `migrate_cells` is False), number it, write the proxy, then
    schedule each cell's sweeps with its own pg_cron (unless `schedule` is False).

    :return: by cell number, None where pg_cron now runs that cell's sweeps, else why not (as
        :func:`schedule_sweeps`); empty when `schedule` is False.
    """
    from pgflight import migrate

    for n, dsn in enumerate(cell_dsns, 1):
        if migrate_cells:
            migrate.deploy(dsn)
        with psycopg.connect(dsn, autocommit=True) as c:
            assign_cell(c, n)
    deploy_proxy(proxy_dsn, cell_dsns)
    return schedule_sweeps(cell_dsns) if schedule else {}


# --- sweeps in each cell ------------------------------------------------------------------------
def schedule_sweeps(cell_dsns: Sequence[str]) -> dict[int, str | None]:
    """
    Install each cell's pg_cron jobs, as a single database's deploy does
    (``pgflight.install_schedules()``, which fits pg_cron 1.4's minute schedules and >= 1.5's
    seconds): every cell sweeps its own leases, wakes, budgets and retention, with no worker and no
    proxy involved. The proxy database has no sweeps (it holds no rows of the engine).

    :return: by cell number (1 first), None where pg_cron now runs the sweeps, else why not
        (pg_cron missing in that database, ZF011): that cell's sweeps must be run another way.
    """
    from pgflight import migrate

    return {n: migrate.install_schedules(dsn) for n, dsn in enumerate(cell_dsns, 1)}


# --- cells on this machine (tests, benchmarks) -------------------------------------------------
@dataclass
class LocalCells:
    """N PostgreSQL servers on their own ports, one cell each, and the proxy database on the first."""

    clusters: list[Any]  # pgflight.embedded.Cluster
    cell_dsns: list[str]  # superuser
    proxy_dsn: str  # superuser
    #: by cell, None where pg_cron runs its sweeps, else why not (empty: not asked for)
    cron: dict[int, str | None] = field(default_factory=dict)

    def as_login(self, login: str, password: str, dsn: str | None = None) -> str:
        return make_conninfo(dsn or self.proxy_dsn, user=login, password=password)


def plproxy_available(dsn: str) -> bool:
    """Whether the server at `dsn` offers the plproxy extension (installed or installable)."""
    with psycopg.connect(dsn) as c:
        return (
            c.execute("select 1 from pg_available_extensions where name = 'plproxy'").fetchone() is not None
        )


def _scram_logins(cluster: Any, logins: dict[str, str], password: str) -> None:
    """Login roles (name: lane role) with a scram password, required over TCP; postgres keeps trust."""
    with psycopg.connect(cluster.dsn("postgres"), autocommit=True) as c:
        c.execute("set password_encryption = 'scram-sha-256'")
        for login, role in logins.items():
            c.execute(
                sql.SQL("create role {} login password {} in role {}").format(
                    sql.Identifier(login), sql.Literal(password), sql.Identifier(role)
                )
            )
        hba = cluster.datadir / "pg_hba.conf"
        hba.write_text(
            "host all postgres 127.0.0.1/32 trust\n"
            f"host all {','.join(logins)} 127.0.0.1/32 scram-sha-256\n" + hba.read_text()
        )
        c.execute("select pg_reload_conf()")


@contextmanager
def local_cells(
    n: int,
    *,
    logins: dict[str, str],
    password: str,
    settings: dict[str, str] | None = None,
    cron: bool = False,
) -> Iterator[LocalCells]:
    """
    Start `n` throwaway servers (pgflight deployed in the first, the others copies of it made with
    :meth:`Cluster.copy_of`), number a cell in each, the proxy database on the first,
    and `logins` (name: lane role) in every server with an every-workspace grant of their lane and
    a user mapping on the proxy. Everything is destroyed on exit. Raises CellsError without PL/Proxy.
    With `cron`, pg_cron (where the server has it) serves each cell's database and each cell's
    sweeps are scheduled as `pgflight cells deploy` does; :attr:`LocalCells.cron` says why not.
    """
    from concurrent.futures import ThreadPoolExecutor

    from pgflight import migrate
    from pgflight.embedded import Cluster

    folders = [Path(tempfile.mkdtemp(prefix=f"pgflight-cell{i}-")) for i in range(1, n + 1)]
    clusters: list[Any] = []
    try:
        cron_db = {"cron.database_name": "postgres"} if cron else {}  # the cells' database
        for f in folders:
            os.chmod(f, 0o755)  # as root the server runs as postgres
            clusters.append(Cluster(f, settings={**cron_db, **(settings or {})}))
        first = clusters[0]
        first.up()
        if not plproxy_available(first.dsn("postgres")):
            raise CellsError("PL/Proxy is not installed (postgresql-<V>-plproxy; scripts/setup installs it)")
        # one deploy: the other servers start as copies of the first, stopped once it is deployed
        migrate.deploy(first.dsn("postgres"))
        first.stop()
        for cl in clusters[1:]:
            cl.copy_of(first)
        with ThreadPoolExecutor(n) as ex:
            list(ex.map(lambda cl: cl.start(), clusters))
        dsns = [cl.dsn("postgres") for cl in clusters]
        for cl in clusters:
            _scram_logins(cl, logins, password)
        clusters[0].create_database("pgflight_proxy")
        proxy = clusters[0].dsn("pgflight_proxy")
        why_not = deploy(dsns, proxy, migrate_cells=False, schedule=cron)
        for login in logins:
            map_login(proxy, login, password)
        for d in dsns:
            with psycopg.connect(d, autocommit=True) as c:
                for login, role in logins.items():
                    c.execute(
                        "select pgflight.grant_workspace(%s, null, %s)",
                        [login, role.removeprefix("pgflight_")],
                    )
        yield LocalCells(clusters, dsns, proxy, why_not)
    finally:
        for cl in clusters:
            with suppress(Exception):
                cl.destroy()
        for f in folders:
            shutil.rmtree(f, ignore_errors=True)
