"""
The fence matrix: every pgflight function a lane may execute, called as each lane's login with a
hostile value in each argument in turn, generated from the catalogue.

How a call is built. `security_support.CALLS` holds one valid call per API function (a query and
its parameters). `parse_call` splits that call into its arguments; `hostile_inputs` gives, per
argument (found by position in `pg_proc`), the values an attacker sends: NULL, zero, negative,
the largest value of the type, a deeply nested and an oversized JSON document, empty arrays,
arrays with a NULL element and arrays one element longer than their sibling, and the ids and
fencing tokens of other tenants and other logins (`Foreign`). A defaulted argument the valid call
omits is given by name. An argument of a type this module has no hostile values for, or a
function without a valid call, fails the matrix: a new function is covered before it ships.

How a call is judged (`judge`). Each call runs in its own transaction of the login, which is
rolled back; when the call succeeds, the digest of every engine table is taken inside that
transaction (by a SECURITY DEFINER function of the test database, owned by the superuser, so it
reads every row), after `set constraints all immediate`: per table and row scope, the row count
and the rows the transaction wrote. The data set is the same for every call of one function, so
one digest taken before is the baseline for all of them.

- A call that raises changes nothing (PostgreSQL undoes the statement). Its SQLSTATE must be
  pgflight's own (class ZF), 22023 (invalid parameter value) or 22004 (null value not allowed);
  42501 only for a function the lane may not execute. Anything else (23502, 22P02, 22003, XX000,
  54001, 57014 ...) is a hole: the function let the value reach an internal check.
- A call that succeeds may change only rows of its own scope: rows of the caller's workspaces
  (`ALLOWED_SCOPES`), and the caller's own workers. A row of another workspace, of another login,
  or of no workspace at all (settings, shared rate buckets, an event with no run) must not change.
  A reader changes nothing.
- A read function (stable or immutable) called with an id or a workspace name of another
  workspace returns no row (or a row of nulls, a scalar function's null), as for an id that does
  not exist: the rows a call returns are judged, not only what it changed. (That the answer is
  exactly that of an unknown id, error or rows, is test_one_answer.py's, over the same catalogue.)

Digest scopes (`scope_expression`): a row belongs to the workspace named by its `workspace_id`,
else by its run, step, agent run, parent step or schedule; a worker row to its login; a flow slot
to its scope (0: global); everything else is global.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from security_support import CALLS, Conn, World

DIGEST_SCHEMA = "fence_matrix"
#: JSON the engine must refuse or survive: 5,000 nested arrays (40 KB), and a string larger than
#: every size cap (the matrix lowers the caps to `SMALL_CAP_BYTES`, so it sends 128 KB, not 16 MB).
DEEP_JSON = '{"a": ' + "[" * 5000 + "]" * 5000 + "}"
SMALL_CAP_BYTES = 65536
BIG_TEXT = "x" * (2 * SMALL_CAP_BYTES)
BIG_JSON = '{"x": "' + BIG_TEXT + '"}'

INT_MAX = {"smallint": 32767, "integer": 2147483647, "bigint": 9223372036854775807}

#: The mark of a hostile value that names another workspace's object (an input's label holds it):
#: a read function answers it with no row.
FOREIGN_MARK = "workspace B"

#: SQLSTATEs a hostile call may end with (42501 too, for a function outside the lane).
ALLOWED_STATES = ("22023", "22004")


def allowed_state(state: str | None, executable: bool) -> bool:
    """Whether a raised call's SQLSTATE is one the API documents for bad input."""
    if state is None:
        return False
    if not executable:
        return state == "42501"
    return state.startswith("ZF") or state in ALLOWED_STATES


# --- the digest --------------------------------------------------------------------------------


def scope_expression(table: str, columns: set[str]) -> str:
    """SQL giving the scope ('ws:<id>', 'login:<name>' or 'global') of a row `x` of `table`."""
    ws_of_run = "(select 'ws:' || r.workspace_id from pgflight.runs r where r.id = x.{})"
    ws_of_step = (
        "(select 'ws:' || r.workspace_id from pgflight.steps s join pgflight.runs r on r.id = s.run_id"
        " where s.id = x.{})"
    )
    if table == "workspaces":
        return "'ws:' || x.id"
    if table == "workers":
        return "'login:' || x.login"
    if table in ("flow_slots", "flow_slot_returns"):
        return "case when x.scope = 0 then 'global' else 'ws:' || x.scope end"
    parts: list[str] = []
    if "workspace_id" in columns:
        parts.append("'ws:' || x.workspace_id")
    if "run_id" in columns:
        parts.append(ws_of_run.format("run_id"))
    if "step_id" in columns:
        parts.append(ws_of_step.format("step_id"))
    if "parent_id" in columns:
        parts.append(ws_of_step.format("parent_id"))
    if "agent_run_id" in columns:
        parts.append(
            "(select 'ws:' || a.workspace_id from pgflight.agent_runs a where a.id = x.agent_run_id)"
        )
    if "schedule_id" in columns:
        parts.append("(select 'ws:' || s.workspace_id from pgflight.schedules s where s.id = x.schedule_id)")
    if "worker_id" in columns:
        parts.append("(select 'login:' || w.login from pgflight.workers w where w.id = x.worker_id)")
    parts.append("'global'")
    return "coalesce(" + ", ".join(parts) + ")"


def lower_caps(su: Conn) -> None:
    """Size caps of `SMALL_CAP_BYTES` in the test database, so an oversized value is cheap to send."""
    su.execute(
        "update pgflight.settings set max_input_bytes = %(b)s, max_result_bytes = %(b)s,"
        " max_error_bytes = %(b)s, max_receipt_bytes = %(b)s, max_approval_request_bytes = %(b)s",
        {"b": SMALL_CAP_BYTES},
    )
    # waits: the event payload cap too (emit_event's payload, wait_event's default)
    su.execute("update pgflight.settings set max_event_payload_bytes = %(b)s", {"b": SMALL_CAP_BYTES})


def text_json(conn: Conn) -> None:
    """Return json and jsonb as text on `conn`: a result echoing a deep document is not decoded."""
    from psycopg.types.string import TextLoader

    for name in ("json", "jsonb"):
        conn.adapters.register_loader(name, TextLoader)


def install_digest(su: Conn, logins: list[str]) -> int:
    """
    Create `fence_matrix.digest()` in the test database, as the superuser, executable by `logins`:
    per engine table and row scope, how many rows it has and how many of them the calling
    transaction wrote (inserted or updated: the row version's xmin is one of its transaction ids,
    which are never below its top-level id). A call that deleted a row shows as a smaller count,
    one that wrote a row as a written row: no row text is hashed, so a digest costs one scan.
    Returns how many tables it covers.
    """
    tables = su.execute(
        "select c.relname, array_agg(a.attname::text) from pg_class c"
        " join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped"
        " where c.relnamespace = 'pgflight'::regnamespace and c.relkind = 'r'"
        " group by c.relname order by 1"
    ).fetchall()
    parts = [
        f"select {sql.Literal(t).as_string(su)}::text, {scope_expression(t, set(cols))},"
        f" x.xmin::text::bigint >= me.xid from pgflight.{sql.Identifier(t).as_string(su)} x, me"
        for t, cols in tables
    ]
    su.execute(f"create schema if not exists {DIGEST_SCHEMA}")
    su.execute(
        f"create or replace function {DIGEST_SCHEMA}.digest()"
        " returns table(tbl text, scope text, n bigint, written bigint) language plpgsql security definer"
        " set search_path = pg_catalog, pg_temp as $$ begin return query"  # plpgsql: its plan is cached
        " with me as (select coalesce(pg_current_xact_id_if_assigned()::text::bigint % 4294967296,"
        " 4294967296) as xid)"
        " select t, s, count(*), count(*) filter (where w) from ("
        + " union all ".join(parts)
        + ") d(t, s, w) group by t, s; end $$"
    )
    su.execute(f"revoke all on function {DIGEST_SCHEMA}.digest() from public")
    for login in logins:
        su.execute(
            sql.SQL("grant usage on schema {} to {}").format(
                sql.Identifier(DIGEST_SCHEMA), sql.Identifier(login)
            )
        )
        su.execute(
            sql.SQL("grant execute on function {}.digest() to {}").format(
                sql.Identifier(DIGEST_SCHEMA), sql.Identifier(login)
            )
        )
    return len(tables)


Digest = dict[tuple[str, str], tuple[int, int]]


def digest(conn: Conn) -> Digest:
    rows = conn.execute(f"select tbl, scope, n, written from {DIGEST_SCHEMA}.digest()").fetchall()
    return {(t, s): (n, w) for t, s, n, w in rows}


def changed_scopes(before: Digest, after: Digest) -> dict[str, set[str]]:
    """{scope: tables} with rows deleted (fewer rows than before) or written (by the call's transaction)."""
    out: dict[str, set[str]] = {}
    for key in set(before) | set(after):
        n_before = before.get(key, (0, 0))[0]
        n_after, written = after.get(key, (0, 0))
        if n_before != n_after or written:
            out.setdefault(key[1], set()).add(key[0])
    return out


# --- parsing a valid call --------------------------------------------------------------------


@dataclass
class Arg:
    """One argument of a call: its SQL text (with %s placeholders) and those placeholders' values."""

    text: str
    params: list[Any]


def _split_args(text: str) -> list[str]:
    """Split an argument list at its top-level commas (quotes and brackets respected)."""
    out: list[str] = []
    depth = 0
    quote = False
    cur = ""
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            cur += ch
            if ch == "'":
                if i + 1 < len(text) and text[i + 1] == "'":
                    cur += "'"
                    i += 1
                else:
                    quote = False
        elif ch == "'":
            quote = True
            cur += ch
        elif ch in "([{":
            depth += 1
            cur += ch
        elif ch in ")]}":
            depth -= 1
            cur += ch
        elif ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
        i += 1
    if cur.strip():
        out.append(cur.strip())
    return out


def parse_call(name: str, query: str, params: list[Any]) -> list[Arg]:
    """The arguments of `pgflight.<name>(...)` in a valid call of `security_support.CALLS`."""
    m = re.search(rf"pgflight\.{re.escape(name)}\(", query)
    assert m, f"{name}: the valid call does not call pgflight.{name}: {query}"
    start = m.end()
    depth, quote, i = 1, False, start
    while depth:
        ch = query[i]
        if quote:
            if ch == "'":
                quote = False
        elif ch == "'":
            quote = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        i += 1
    assert "%s" not in query[:start] + query[i:], f"{name}: parameters outside the call: {query}"
    args: list[Arg] = []
    rest = list(params)
    for text in _split_args(query[start : i - 1]):
        n = text.count("%s")
        args.append(Arg(text, rest[:n]))
        rest = rest[n:]
    assert not rest, f"{name}: {len(rest)} parameters left over"
    return args


# --- what an attacker holds ----------------------------------------------------------------


@dataclass
class Foreign:
    """Ids and tokens that are not the caller's: another workspace's, another login's, stale ones."""

    ids: dict[str, list[tuple[str, int]]] = field(default_factory=dict)  # kind -> [(label, id)]
    pairs: list[tuple[str, int, int | None]] = field(default_factory=list)  # (label, attempt, token)
    tokens: list[tuple[str, int]] = field(default_factory=list)


def build_foreign(su: Conn, mine: Conn, other: Conn, other_in_b: Conn | None = None) -> Foreign:
    """
    The data set the hostile ids come from (committed once per test):

    - workspace B: a run whose step the other login (a worker of A and B) claimed and started, with
      an agent run; a run never claimed (its attempt queued, no token);
    - workspace A: a step the other login holds, with an agent run; a queued attempt; an attempt
      of the caller's own login that already succeeded (its token is stale).
    """
    f = Foreign()
    wid_other = int(other.execute("select pgflight.register_worker('other-login')").fetchone()[0])  # type: ignore[index]
    wid_mine = int(mine.execute("select pgflight.register_worker('mine')").fetchone()[0])  # type: ignore[index]

    def held(ws: str, conn: Conn, wid: int) -> dict[str, int]:
        recipe = f"fence-{ws}-{wid}-{len(f.pairs)}"
        run, step, _ = su.execute(
            "select run_id, step_id, attempt_id from pgflight.submit_run(%s, %s, '{}', '{}')", [ws, recipe]
        ).fetchone()  # type: ignore[misc]
        att, tok = conn.execute(
            "select attempt_id, fencing_token from pgflight.claim_batch(%s, 1, 600, %s)", [wid, [recipe]]
        ).fetchone()  # type: ignore[misc]
        conn.execute("select * from pgflight.start_step(%s, %s)", [att, tok])
        ar = int(
            conn.execute(
                "select agent_run_id from pgflight.begin_agent_run(%s, %s, %s)",
                [att, tok, Jsonb({"model": "claude-haiku-4-5", "task": "t"})],
            ).fetchone()[0]  # type: ignore[index]
        )
        return {"run": run, "step": step, "attempt": att, "token": tok, "agent_run": ar}

    def queued(ws: str) -> dict[str, int]:
        run, step, att = su.execute(
            "select run_id, step_id, attempt_id from pgflight.submit_run(%s, %s, '{}', '{}')",
            [ws, f"fence-queued-{ws}"],
        ).fetchone()  # type: ignore[misc]
        return {"run": run, "step": step, "attempt": att}

    b = held("B", other, wid_other)
    bq = queued("B")
    ao = held("A", other, wid_other)
    aq = queued("A")
    stale = held("A", mine, wid_mine)
    mine.execute("select * from pgflight.complete_step(%s, %s, '{}')", [stale["attempt"], stale["token"]])

    f.ids["attempt"] = [
        ("attempt of workspace B", b["attempt"]),
        ("queued attempt of workspace B", bq["attempt"]),
        ("another login's attempt", ao["attempt"]),
        ("queued attempt never claimed", aq["attempt"]),
        ("own finished attempt", stale["attempt"]),
    ]
    f.ids["run"] = [("run of workspace B", b["run"]), ("queued run of workspace B", bq["run"])]
    f.ids["step"] = [("step of workspace B", b["step"]), ("queued step of workspace B", bq["step"])]
    f.ids["agent_run"] = [
        ("agent run of workspace B", b["agent_run"]),
        ("another login's agent run", ao["agent_run"]),
    ]
    f.ids["worker"] = [("another login's worker", wid_other)]
    f.tokens = [
        ("token of workspace B", b["token"]),
        ("another login's token", ao["token"]),
        ("stale token", stale["token"]),
    ]
    f.pairs = [
        ("attempt and token of workspace B", b["attempt"], b["token"]),
        ("another login's attempt and token", ao["attempt"], ao["token"]),
        ("queued attempt of workspace B, null token", bq["attempt"], None),
        ("queued attempt never claimed, null token", aq["attempt"], None),
        ("own finished attempt, stale token", stale["attempt"], stale["token"]),
    ]
    return f


# --- hostile values ----------------------------------------------------------------------------

#: argument name -> the kind of id it names (for the foreign ids of that kind)
ID_KINDS = {
    "p_attempt_id": "attempt",
    "p_attempt_ids": "attempt",
    "p_run_id": "run",
    "p_step_id": "step",
    "p_agent_run_id": "agent_run",
    "p_worker_id": "worker",
}


def _array(values: list[Any]) -> str:
    def one(v: Any) -> str:
        if v is None:
            return "NULL"
        s = str(v).replace("\\", "\\\\").replace('"', '\\"')
        return f'"{s}"'

    return "{" + ",".join(one(v) for v in values) + "}"


def _base_list(arg: Arg | None) -> list[Any] | None:
    """The Python list a valid array argument was passed as (None when it was a literal)."""
    if arg is not None and arg.text == "%s" and len(arg.params) == 1 and isinstance(arg.params[0], list):
        return [p.obj if isinstance(p, Jsonb) else p for p in arg.params[0]]
    return None


def hostile_values(name: str, typ: str, base: Arg | None, foreign: Foreign) -> list[tuple[str, str | None]]:
    """
    (label, value as text; None for NULL) of every hostile value for argument `name` of type `typ`.
    An empty list means the type is unknown to the matrix.
    """
    vals: list[tuple[str, str | None]] = [("null", None)]
    kind = ID_KINDS.get(name)
    if typ in INT_MAX:
        vals += [("zero", "0"), ("negative", "-1"), ("largest", str(INT_MAX[typ]))]
        if kind:
            vals += [(label, str(i)) for label, i in foreign.ids.get(kind, [])]
        if name in ("p_token",):
            vals += [(label, str(t)) for label, t in foreign.tokens]
    elif typ in ("double precision", "real", "numeric"):
        vals += [
            ("zero", "0"),
            ("negative", "-1"),
            ("NaN", "NaN"),
            ("infinity", "Infinity"),
            ("huge", "1e300"),
        ]
    elif typ in ("text", "name", "character varying"):
        vals += [("empty", "")]
        if typ != "name":
            vals += [("larger than every cap", BIG_TEXT)]
        if name == "p_workspace":
            vals += [("workspace B", "B"), ("unknown workspace", "no-such-workspace")]
        if name == "p_login":
            vals += [("another login", "pgf_worker_b")]
    elif typ == "jsonb":
        vals += [
            ("json null", "null"),
            ("json array", "[]"),
            ("json string", '"x"'),
            ("json number", "-1"),
            ("nested 5,000 deep", DEEP_JSON),
            ("larger than every cap", BIG_JSON),
        ]
    elif typ == "boolean":
        pass
    elif typ == "timestamp with time zone":
        vals += [("infinity", "infinity"), ("-infinity", "-infinity")]
    elif typ == "interval":
        vals += [("negative", "-1 day"), ("huge", "100000000 years")]
    elif typ.endswith("[]"):
        elem = typ[:-2]
        base_list = _base_list(base)
        vals += [("empty array", "{}"), ("array of null", "{NULL}")]
        if base_list:
            extra = base_list + base_list[-1:]
            vals += [("one element more than its sibling", _array([_text(v) for v in extra]))]
        if elem in INT_MAX:
            vals += [("array of -1", "{-1}"), ("array of largest", "{" + str(INT_MAX[elem]) + "}")]
            if kind:
                vals += [(f"array of {label}", "{" + str(i) + "}") for label, i in foreign.ids.get(kind, [])]
            if name == "p_tokens":
                vals += [(f"array of {label}", "{" + str(t) + "}") for label, t in foreign.tokens]
        elif elem == "jsonb":
            vals += [("array of nested 5,000 deep", _array([DEEP_JSON]))]
        elif elem == "text":
            vals += [("array of empty", '{""}')]
        else:
            return []
    else:
        return []
    return vals


def _text(v: Any) -> str:
    import json

    if isinstance(v, dict | list):
        return json.dumps(v)
    return str(v)


@dataclass
class Signature:
    """A function's arguments from pg_proc: names, types, how many have defaults."""

    name: str
    regprocedure: str
    arg_names: list[str]
    arg_types: list[str]
    n_defaults: int
    reads: bool = False  # stable or immutable: it only reads


def signatures(su: Conn, names: list[str]) -> dict[str, list[Signature]]:
    """Every overload of each function named, from pg_proc."""
    rows = su.execute(
        "select p.proname, p.oid::regprocedure::text, coalesce(p.proargnames, '{}'),"
        " array(select format_type(t, null) from unnest(p.proargtypes) with ordinality u(t, i) order by i),"
        " p.pronargdefaults, p.provolatile <> 'v' from pg_proc p"
        " where p.pronamespace = 'pgflight'::regnamespace and p.prokind = 'f' and p.proname = any(%s)",
        [names],
    ).fetchall()
    out: dict[str, list[Signature]] = {}
    for name, reg, argnames, types, ndef, reads in sorted(rows):
        out.setdefault(name, []).append(
            Signature(name, reg, list(argnames)[: len(types)], list(types), ndef, bool(reads))
        )
    return out


@dataclass
class Input:
    """One hostile call: which argument(s), which value(s), the query and its parameters."""

    label: str
    query: str
    params: list[Any]


def build_inputs(sig: Signature, args: list[Arg], foreign: Foreign) -> Iterator[Input]:
    """Every hostile call of `sig`, starting from the valid call `args` (one argument changed at a time)."""
    n = len(sig.arg_types)
    assert len(args) <= n, f"{sig.name}: the valid call passes {len(args)} arguments, the function takes {n}"
    first_default = n - sig.n_defaults

    def render(replace: dict[int, str | None]) -> tuple[str, list[Any]]:
        texts: list[str] = []
        params: list[Any] = []
        for i in range(n):
            if i in replace:
                cast = f"%s::{sig.arg_types[i]}"
                texts.append(cast if i < len(args) else f"{sig.arg_names[i]} => {cast}")
                params.append(replace[i])
            elif i < len(args):  # cast to this overload's type, so the call resolves to it
                texts.append(f"({args[i].text})::{sig.arg_types[i]}")
                params.extend(args[i].params)
            elif i < first_default:
                raise AssertionError(f"{sig.name}: argument {sig.arg_names[i]} has no default and no value")
        return f"select * from pgflight.{sig.name}({', '.join(texts)})", params

    q, p = render({})
    yield Input("the valid call", q, p)
    for i in range(n):
        name, typ = sig.arg_names[i], sig.arg_types[i]
        values = hostile_values(name, typ, args[i] if i < len(args) else None, foreign)
        assert values, f"{sig.name}: no hostile values for {name} {typ}: give the matrix that type"
        for label, value in values:
            q, p = render({i: value})
            yield Input(f"{name} = {label}", q, p)
    # an attempt with a token that is not the caller's (the two arguments changed together)
    for ids, toks, arr in (("p_attempt_id", "p_token", False), ("p_attempt_ids", "p_tokens", True)):
        if ids in sig.arg_names and toks in sig.arg_names:
            ia, it = sig.arg_names.index(ids), sig.arg_names.index(toks)
            for label, att, tok in foreign.pairs:
                if arr:
                    va, vt = "{" + str(att) + "}", "{" + ("NULL" if tok is None else str(tok)) + "}"
                else:
                    va, vt = str(att), None if tok is None else str(tok)
                q, p = render({ia: va, it: vt})
                yield Input(f"{ids}, {toks} = {label}", q, p)


# --- running it --------------------------------------------------------------------------------


@dataclass
class Outcome:
    calls: int = 0
    failures: list[str] = field(default_factory=list)


def judge(
    me: Conn,
    fn: str,
    inputs: list[Input],
    *,
    executable: bool,
    allowed_scopes: set[str] | None,
    baseline: Digest,
    outcome: Outcome,
    reads: bool = False,
) -> None:
    """
    Run each input in its own rolled-back transaction of `me`; record every breach in `outcome`.

    :param allowed_scopes: the scopes a successful call may change (None: any, for an
        every-workspace operator, whose calls are judged by their SQLSTATE alone).
    :param reads: the function only reads (stable or immutable): called with an id or name of
        another workspace (`FOREIGN_MARK` in the input's label) it must return no row, or only
        rows of nulls (a scalar function's null), exactly as for an id that does not exist.
    """
    for inp in inputs if executable else inputs[:1]:
        outcome.calls += 1
        state: str | None = None
        message = ""
        after: Digest | None = None
        rows: list[Any] = []
        try:
            with me.transaction(force_rollback=True):
                rows = me.execute(inp.query, inp.params).fetchall()
                me.execute("set constraints all immediate")
                if allowed_scopes is not None:
                    after = digest(me)
        except psycopg.Error as e:
            state, message = e.sqlstate, str(e).splitlines()[0][:200]
        where = f"{fn} ({inp.label})"
        if state is not None:
            if not allowed_state(state, executable):
                outcome.failures.append(f"{where}: raised {state}: {message}")
            continue
        if not executable:
            outcome.failures.append(f"{where}: succeeded outside the lane (expected 42501)")
            continue
        if reads and allowed_scopes is not None and FOREIGN_MARK in inp.label:
            shown = [r for r in rows if any(v is not None for v in r)]
            if shown:
                outcome.failures.append(
                    f"{where}: returned {len(shown)} row(s) for another workspace's id (expected none)"
                )
        if after is not None and allowed_scopes is not None:
            bad = {s: t for s, t in changed_scopes(baseline, after).items() if s not in allowed_scopes}
            if bad:
                tables = "; ".join(f"{s}: {', '.join(sorted(t))}" for s, t in sorted(bad.items()))
                outcome.failures.append(f"{where}: succeeded and changed rows outside its scope ({tables})")


def valid_call(world: World, fn: str) -> tuple[str, list[Any]]:
    """The valid call of `fn` (security_support.CALLS), with its setup done."""
    return CALLS[fn](world)
