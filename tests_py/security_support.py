"""
Helpers for test_security_attacks.py: connections as real login roles, the shadowing
kit (temporary domains, views, functions and operators named like everything pgflight's functions
use, each with a tripwire that reports `current_user`), and one valid call per API function.

The API is enumerated from the catalogue (`api_functions`): every function in schema pgflight a
lane may EXECUTE. `CALLS` holds how to call each one with valid arguments; a function the
catalogue lists and `CALLS` lacks fails the test, so a new API function cannot skip the suite.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

Conn = psycopg.Connection[Any]
TRIPWIRE = "pgflight-tripwire ran as "
OWNER = "pgflight_owner"
LANES = ("worker", "operator", "reader")
_counter = itertools.count(1)


def login_connect(dsn: str, *, timeout_s: float = 10) -> Conn:
    """An autocommit connection as a login (DSN with user and password), with statement and lock timeouts."""
    ms = int(timeout_s * 1000)
    return psycopg.connect(dsn, autocommit=True, options=f"-c statement_timeout={ms} -c lock_timeout={ms}")


def grant(su: Conn, login: str, workspace: str | None, lane: str) -> None:
    """Grant `login` a lane on `workspace` (None: every workspace) with pgflight.grant_workspace."""
    su.execute("select pgflight.grant_workspace(%s, %s, %s)", [login, workspace, lane])


def fresh(prefix: str) -> str:
    """A name no other call of this session used."""
    return f"{prefix}-{next(_counter)}"


def error_of(fn: Callable[[], Any]) -> psycopg.Error:
    """Run fn, which must raise a database error; return it."""
    try:
        fn()
    except psycopg.Error as e:
        return e
    raise AssertionError("the call succeeded; it should have been refused")


def snapshot(su: Conn) -> dict[str, Any]:
    """Every engine table's content as text (md5 per table): proof that a refused call wrote nothing."""
    tables = [
        r[0]
        for r in su.execute(
            "select c.relname from pg_class c where c.relnamespace = 'pgflight'::regnamespace"
            " and c.relkind = 'r' order by 1"
        ).fetchall()
    ]
    out: dict[str, Any] = {}
    for t in tables:
        q = sql.SQL(
            "select count(*), md5(coalesce(string_agg(x::text, ',' order by x::text), '')) from pgflight.{} x"
        )
        out[t] = su.execute(q.format(sql.Identifier(t))).fetchone()
    return out


# --- the shadowing kit --------------------------------------------------------------------------


def _identifiers_used(su: Conn) -> set[str]:
    """Every word in the bodies of pgflight's functions and views (candidates for shadowing)."""
    texts = [
        r[0]
        for r in su.execute(
            "select p.prosrc from pg_proc p where p.pronamespace = 'pgflight'::regnamespace"
            " union all select pg_get_viewdef(c.oid) from pg_class c"
            "  where c.relnamespace = 'pgflight'::regnamespace and c.relkind = 'v'"
        ).fetchall()
    ]
    return {w.lower() for t in texts for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", t)}


@dataclass
class ShadowKit:
    """The statements an attacking session runs to shadow what pgflight's functions name."""

    statements: list[str] = field(default_factory=list)

    @classmethod
    def build(cls, su: Conn) -> ShadowKit:
        used = _identifiers_used(su)
        kit = cls()
        kit.statements.append(
            "create function pg_temp.tripwire() returns boolean language plpgsql as $$"
            f" begin raise notice '{TRIPWIRE}%', current_user; return true; end $$"
        )
        # Views named like every pgflight table and view and every other word the bodies use
        # that could be read as a relation: an unqualified relation name would find these first.
        relations = {
            r[0]
            for r in su.execute(
                "select c.relname from pg_class c where c.relnamespace = 'pgflight'::regnamespace"
                " and c.relkind in ('r', 'v', 'S')"
            ).fetchall()
        }
        # (Not the type names: a view's row type would take the name the domains below need.)
        type_names = {r[0] for r in su.execute("select typname from pg_type").fetchall()}
        words = {w for w in used if len(w) > 2} - type_names - {"tripwire"}
        for name in sorted(relations | words):
            kit.statements.append(
                f'create temporary view "{name}" as select 1 as id where pg_temp.tripwire()'
            )
        # Functions named like every pg_catalog function the bodies call, with its signatures.
        funcs = su.execute(
            "select p.proname, (select coalesce(string_agg(format_type(a, null), ', '), '')"
            "                     from unnest(p.proargtypes) a), format_type(p.prorettype, null)"
            "  from pg_proc p where p.pronamespace = 'pg_catalog'::regnamespace and p.prokind = 'f'"
            "   and p.proname = any(%s) and not p.proretset"
            "   and p.prorettype not in (select oid from pg_type where typtype = 'p')"
            "   and not exists (select from unnest(p.proargtypes) a join pg_type t on t.oid = a"
            "                   where t.typtype = 'p') order by 1, 2",
            [sorted(used)],
        ).fetchall()
        for name, args, ret in funcs:
            kit.statements.append(
                f'create function pg_temp."{name}"({args}) returns {ret}'
                " language plpgsql as $$ begin perform pg_temp.tripwire(); return null; end $$"
            )
        # Operators named like pg_catalog's on the types the engine uses.
        ops = su.execute(
            "select o.oprname, format_type(o.oprleft, null), format_type(o.oprright, null)"
            "  from pg_operator o where o.oprnamespace = 'pg_catalog'::regnamespace and o.oprleft <> 0"
            "   and o.oprright <> 0 and o.oprleft = any(%s::regtype[]) and o.oprright = any(%s::regtype[])"
            " order by 1, 2, 3",
            [_ENGINE_TYPES, _ENGINE_TYPES],
        ).fetchall()
        for i, (op, left, right) in enumerate(ops):
            fn = f"pg_temp.tripwire_op_{i}"
            kit.statements.append(
                f"create function {fn}({left}, {right}) returns boolean"
                " language sql as 'select pg_temp.tripwire()'"
            )
            kit.statements.append(
                f"create operator pg_temp.{op} (leftarg = {left}, rightarg = {right}, function = {fn})"
            )
        # Last, since the statements above name pg_catalog types unqualified: domains named like
        # every base type of pg_catalog (text, jsonb, timestamptz, int8 ...). With search_path = ''
        # an unqualified type name is looked up in pg_temp first.
        types = su.execute(
            "select t.typname from pg_type t where t.typnamespace = 'pg_catalog'::regnamespace"
            " and t.typtype = 'b' and t.typcategory <> 'A' and t.typname !~ '^_' order by 1"
        ).fetchall()
        for (name,) in types:
            kit.statements.append(
                f'create domain pg_temp."{name}" as pg_catalog."{name}" check (pg_temp.tripwire())'
            )
        return kit

    def install(self, conn: Conn) -> int:
        """Run the kit in `conn` (a statement PostgreSQL refuses is skipped); return how many took."""
        took = 0
        for stmt in self.statements:
            try:
                with conn.transaction():
                    conn.execute(stmt)
                took += 1
            except psycopg.Error:
                pass
        return took


_ENGINE_TYPES = ["int4", "int8", "float8", "numeric", "text", "jsonb", "timestamptz", "interval", "bool"]


class Tripwires:
    """Collect the tripwire notices a connection receives; `owners()` are those that ran as another role."""

    def __init__(self, conn: Conn, login: str) -> None:
        self.login = login
        self.seen: list[str] = []
        conn.add_notice_handler(self._on_notice)

    def _on_notice(self, diag: psycopg.errors.Diagnostic) -> None:
        msg = diag.message_primary or ""
        if msg.startswith(TRIPWIRE):
            self.seen.append(msg[len(TRIPWIRE) :])

    def foreign(self) -> list[str]:
        """Roles other than the login that a tripwire ran as (the owner, when an attack worked)."""
        return sorted({r for r in self.seen if r != self.login})


# --- one valid call per API function ---------------------------------------------------------------


def api_functions(su: Conn, role: str) -> dict[str, str]:
    """{name: signature} of every pgflight function `role` may EXECUTE (from the catalogue)."""
    got = su.execute(
        "select p.proname, p.oid::regprocedure::text from pg_proc p"
        " where p.pronamespace = 'pgflight'::regnamespace and p.prokind = 'f'"
        "   and has_function_privilege(%s, p.oid, 'EXECUTE') order by 1",
        [role],
    ).fetchall()
    return {name: sig for name, sig in got}


def readable_views(su: Conn, role: str) -> list[str]:
    """Every pgflight view `role` may SELECT (from the catalogue)."""
    return [
        r[0]
        for r in su.execute(
            "select c.relname from pg_class c where c.relnamespace = 'pgflight'::regnamespace"
            " and c.relkind = 'v' and has_table_privilege(%s, c.oid, 'SELECT') order by 1",
            [role],
        ).fetchall()
    ]


@dataclass
class World:
    """
    What the calls act on: `su` (the superuser, who sets things up), `me` (the attacking login's
    connection), the login's workspace and its own registered worker.
    """

    su: Conn
    me: Conn
    workspace: str
    worker_id: int | None = None

    def submit(self, recipe: str | None = None, **options: Any) -> dict[str, int]:
        recipe = recipe or fresh("r")
        row = self.su.execute(
            "select run_id, step_id, attempt_id from pgflight.submit_run(%s, %s, '{}', %s)",
            [self.workspace, recipe, Jsonb(options)],
        ).fetchone()
        assert row is not None
        return {"run_id": row[0], "step_id": row[1], "attempt_id": row[2], "recipe": recipe}  # type: ignore[dict-item]

    def held(self, **options: Any) -> dict[str, Any]:
        """A fresh step claimed and started by the login's own worker (through `me`)."""
        assert self.worker_id is not None
        sub = self.submit(**options)
        row = self.me.execute(
            "select attempt_id, fencing_token from pgflight.claim_batch(%s, 1, 60, %s)",
            [self.worker_id, [sub["recipe"]]],
        ).fetchone()
        assert row is not None, "the login's worker could not claim its own workspace's step"
        self.me.execute("select * from pgflight.start_step(%s, %s)", [row[0], row[1]])
        return {**sub, "attempt_id": row[0], "token": row[1]}

    def su_held(self, **options: Any) -> dict[str, Any]:
        """A fresh step claimed and started by a superuser worker."""
        sub = self.submit(**options)
        w = self.su.execute("select pgflight.register_worker('setup')").fetchone()
        assert w is not None
        row = self.su.execute(
            "select attempt_id, fencing_token from pgflight.claim_batch(%s, 1, 60, %s)",
            [w[0], [sub["recipe"]]],
        ).fetchone()
        assert row is not None
        self.su.execute("select * from pgflight.start_step(%s, %s)", [row[0], row[1]])
        return {**sub, "attempt_id": row[0], "token": row[1], "worker_id": w[0]}

    def agent(self, held: dict[str, Any], conn: Conn) -> int:
        """Begin an agent run on a held attempt; its id."""
        row = conn.execute(
            "select agent_run_id from pgflight.begin_agent_run(%s, %s, %s)",
            [held["attempt_id"], held["token"], Jsonb({"model": "claude-haiku-4-5", "task": "t"})],
        ).fetchone()
        assert row is not None
        return int(row[0])

    def finished_run(self) -> dict[str, Any]:
        """A run whose root step succeeded (for replay, audit, purge)."""
        h = self.su_held()
        self.su.execute(
            "select * from pgflight.complete_step(%s, %s, '{\"ok\": true}')", [h["attempt_id"], h["token"]]
        )
        return h

    def dead_letter(self) -> dict[str, Any]:
        h = self.su_held(max_attempts=1)
        self.su.execute(
            'select * from pgflight.fail_step(%s, %s, \'{"m": "x"}\')', [h["attempt_id"], h["token"]]
        )
        return h

    def tool_use(self, held: dict[str, Any], ar: int, conn: Conn) -> str:
        """A model call that asked for one tool; the tool_use id."""
        tid = fresh("tu")
        conn.execute(
            "select * from pgflight.record_model_call(%s, %s, %s, 1, %s,"
            " '{\"input_tokens\": 10}', 'claude-haiku-4-5')",
            [
                held["attempt_id"],
                held["token"],
                ar,
                Jsonb([{"type": "tool_use", "id": tid, "name": "n", "input": {}}]),
            ],
        )
        return tid


Call = Callable[[World], tuple[str, list[Any]]]


def _worker_agent(fn: Callable[[World, dict[str, Any], int], tuple[str, list[Any]]]) -> Call:
    def call(w: World) -> tuple[str, list[Any]]:
        h = w.held()
        return fn(w, h, w.agent(h, w.me))

    return call


def _tool(w: World, h: dict[str, Any], ar: int, query: str) -> tuple[str, list[Any]]:
    tid = w.tool_use(h, ar, w.me)
    return query, [h["attempt_id"], h["token"], ar, tid]


def _finished_agent(w: World) -> dict[str, Any]:
    h = w.su_held()
    ar = w.agent(h, w.su)
    w.su.execute("select * from pgflight.complete_step(%s, %s, '{}')", [h["attempt_id"], h["token"]])
    return {**h, "agent_run_id": ar}


def _agent_with_a_call(w: World) -> dict[str, Any]:
    """A finished agent step that made one model call (an answer): fork_agent may fork it at 1."""
    h = w.su_held()
    ar = w.agent(h, w.su)
    w.su.execute(
        'select * from pgflight.record_model_call(%s, %s, %s, 1, \'[{"type": "text", "text": "ok"}]\','
        " '{\"input_tokens\": 10}', 'claude-haiku-4-5')",
        [h["attempt_id"], h["token"], ar],
    )
    w.su.execute("select * from pgflight.complete_step(%s, %s, '{}')", [h["attempt_id"], h["token"]])
    return {**h, "agent_run_id": ar}


# name -> how to call it with valid arguments (the query returns rows; all of them are fetched).
def _flow_workspace(w: World) -> str:
    """A workspace of its own for the flow-control calls (made by the superuser)."""
    name = fresh("flow")
    w.su.execute("select pgflight.create_workspace(%s, '{}')", [name])
    return name


CALLS: dict[str, Call] = {
    "_now": lambda w: ("select pgflight._now()", []),
    "_fake_now": lambda w: ("select pgflight._fake_now('2030-01-01 00:00:00+00')", []),
    "_vacuum_horizon": lambda w: ("select * from pgflight._vacuum_horizon()", []),
    "_may": lambda w: ("select pgflight._may('reader', null)", []),
    "_lane_workspaces": lambda w: ("select pgflight._lane_workspaces('reader')", []),
    "price_usd": lambda w: ("select pgflight.price_usd('claude-haiku-4-5', '{\"input_tokens\": 1000}')", []),
    "run_status": lambda w: ("select * from pgflight.run_status(%s)", [w.finished_run()["run_id"]]),
    "run_audit": lambda w: ("select * from pgflight.run_audit(%s)", [w.finished_run()["run_id"]]),
    "children_results": lambda w: (
        "select * from pgflight.children_results(%s)",
        [w.finished_run()["step_id"]],
    ),
    "agent_run_of": lambda w: ("select * from pgflight.agent_run_of(%s)", [_finished_agent(w)["step_id"]]),
    "agent_transcript": lambda w: (
        "select * from pgflight.agent_transcript(%s)",
        [_finished_agent(w)["agent_run_id"]],
    ),
    "agent_runs_by_status": lambda w: ("select * from pgflight.agent_runs_by_status('succeeded', 0, 10)", []),
    # the inspector's and the exporter's reads
    "run_list_page": lambda w: (
        'select * from pgflight.run_list_page(null, 50, \'{"status": "queued"}\')',
        [],
    ),
    "dead_letter_page": lambda w: ("select * from pgflight.dead_letter_page(null, 50)", []),
    "pending_approvals": lambda w: ("select * from pgflight.pending_approvals(50)", []),
    "worker_list": lambda w: ("select * from pgflight.worker_list(50)", []),
    "run_waits": lambda w: ("select * from pgflight.run_waits(%s)", [w.submit()["run_id"]]),
    "unserved_recipes": lambda w: ("select * from pgflight.unserved_recipes('{noop,other}')", []),
    "queue_depths": lambda w: ("select * from pgflight.queue_depths()", []),
    "cost_by_day": lambda w: ("select * from pgflight.cost_by_day(7)", []),
    "metrics_snapshot": lambda w: ("select * from pgflight.metrics_snapshot(0, 1000)", []),
    "run_trace_context": lambda w: ("select pgflight.run_trace_context(%s)", [w.submit()["run_id"]]),
    # worker lane
    "register_worker": lambda w: (
        'select pgflight.register_worker(%s, \'{"recipes": ["x"]}\')',
        [fresh("w")],
    ),
    "deregister_worker": lambda w: (
        "select pgflight.deregister_worker(%s)",
        [w.me.execute("select pgflight.register_worker('short-lived')").fetchone()[0]],  # type: ignore[index]
    ),
    "claim_batch": lambda w: (
        "select * from pgflight.claim_batch(%s, 1, 30, %s, '{}')",
        [w.worker_id, [w.submit()["recipe"]]],  # type: ignore[list-item]
    ),
    "start_step": lambda w: _claimed_only(w, "select * from pgflight.start_step(%s, %s)"),
    "heartbeat": lambda w: (
        lambda h: (
            "select * from pgflight.heartbeat(%s, %s, %s)",
            [w.worker_id, [h["attempt_id"]], [h["token"]]],
        )
    )(w.held()),
    "complete_step": lambda w: (
        lambda h: (
            "select * from pgflight.complete_step(%s, %s, '{\"r\": 1}')",
            [h["attempt_id"], h["token"]],
        )
    )(w.held()),
    "complete_batch": lambda w: (
        lambda h: (
            "select * from pgflight.complete_batch(%s, %s, %s)",
            [[h["attempt_id"]], [h["token"]], [Jsonb({"r": 1})]],
        )
    )(w.held()),
    "complete_and_claim": lambda w: (
        lambda h: (
            "select * from pgflight.complete_and_claim(%s, %s, %s, %s, 1, 30, %s, '{\"start\": true}')",
            [w.worker_id, [h["attempt_id"]], [h["token"]], [Jsonb({"r": 1})], [w.submit()["recipe"]]],
        )
    )(w.held()),
    "fail_step": lambda w: (
        lambda h: (
            "select * from pgflight.fail_step(%s, %s, '{\"m\": \"x\"}', '{}')",
            [h["attempt_id"], h["token"]],
        )
    )(w.held()),
    "complete_step_text": lambda w: (
        lambda h: (
            "select * from pgflight.complete_step_text(%s, %s, '{\"r\": 1}')",
            [h["attempt_id"], h["token"]],
        )
    )(w.held()),
    "fail_step_text": lambda w: (
        lambda h: (
            "select * from pgflight.fail_step_text(%s, %s, '{\"m\": \"x\"}', '{}')",
            [h["attempt_id"], h["token"]],
        )
    )(w.held()),
    "release_step": lambda w: (
        lambda h: ("select * from pgflight.release_step(%s, %s, 'bye')", [h["attempt_id"], h["token"]])
    )(w.held()),
    "spawn_children": lambda w: (
        lambda h: (
            "select * from pgflight.spawn_children(%s, %s, %s, '{}')",
            [h["attempt_id"], h["token"], Jsonb([{"key": "k1", "recipe": "child", "input": {}}])],
        )
    )(w.held()),
    "request_approval": lambda w: (
        lambda h: (
            "select * from pgflight.request_approval(%s, %s, 'gate', '{\"q\": 1}', '{}')",
            [h["attempt_id"], h["token"]],
        )
    )(w.held()),
    # waits: a timer and an event wait of a held attempt, an event of the login's workspace
    "wait_timer": lambda w: (
        lambda h: ("select * from pgflight.wait_timer(%s, %s, 'nap', 5, '{}')", [h["attempt_id"], h["token"]])
    )(w.held()),
    "wait_event": lambda w: (
        lambda h: (
            "select * from pgflight.wait_event(%s, %s, 'paid', 'order.paid', '42',"
            ' \'{"timeout_s": 60, "default": {"paid": false}}\')',
            [h["attempt_id"], h["token"]],
        )
    )(w.held()),
    "emit_event": lambda w: (
        "select * from pgflight.emit_event(%s, 'order.paid', '42', '{\"usd\": 1}',"
        ' \'{"event_id": "e-1"}\')',
        [w.workspace],
    ),
    "expire_waits": lambda w: ("select pgflight.expire_waits(10)", []),
    # tool policies of the login's workspace: a path condition and a USD threshold
    "set_tool_policy": lambda w: (
        "select * from pgflight.set_tool_policy(%s, 'pay',"
        ' \'{"action": "require_approval", "when": "$.usd ? (@ > 100)", "over_usd": 0.5}\')',
        [w.workspace],
    ),
    "drop_tool_policy": lambda w: ("select pgflight.drop_tool_policy(%s, 'pay')", [w.workspace]),
    "tool_policies": lambda w: ("select * from pgflight.tool_policies(%s)", [w.workspace]),
    # streams: a batch written by a held attempt; a read of a run of the login's workspace
    "stream_write": lambda w: (
        lambda h: (
            "select * from pgflight.stream_write(%s, %s, 'tokens', '{a,b}')",
            [h["attempt_id"], h["token"]],
        )
    )(w.held()),
    "stream_read": lambda w: (
        "select * from pgflight.stream_read(%s, 'tokens', 0, 10, 0)",
        [w.submit()["run_id"]],
    ),
    "stream_channels": lambda w: ("select * from pgflight.stream_channels(%s)", [w.submit()["run_id"]]),
    "record_effect": lambda w: (
        lambda h: (
            "select * from pgflight.record_effect(%s, %s, 'charge-1', '{\"id\": 1}')",
            [h["attempt_id"], h["token"]],
        )
    )(w.held()),
    "find_effect": lambda w: ("select * from pgflight.find_effect(%s, 'charge-1')", [w.held()["step_id"]]),
    "record_stale_write": lambda w: (
        lambda h: (
            "select pgflight.record_stale_write(%s, %s, 'complete_step')",
            [h["attempt_id"], h["token"]],
        )
    )(w.held()),
    "begin_agent_run": lambda w: (
        lambda h: (
            'select * from pgflight.begin_agent_run(%s, %s, \'{"model": "claude-haiku-4-5", "task": "t"}\')',
            [h["attempt_id"], h["token"]],
        )
    )(w.held()),
    "reserve_budget": _worker_agent(
        lambda w, h, ar: (
            "select pgflight.reserve_budget(%s, %s, %s, 1, 0.01)",
            [h["attempt_id"], h["token"], ar],
        )
    ),
    "record_model_call": _worker_agent(
        lambda w, h, ar: (
            'select * from pgflight.record_model_call(%s, %s, %s, 1, \'[{"type": "text", "text": "hi"}]\','
            " '{\"input_tokens\": 10}', 'claude-haiku-4-5', '{}')",
            [h["attempt_id"], h["token"], ar],
        )
    ),
    "record_trace": _worker_agent(
        lambda w, h, ar: (
            "select * from pgflight.record_trace(%s, %s, %s, 1, 'system', 'api_error', '{\"e\": 1}', '{}')",
            [h["attempt_id"], h["token"], ar],
        )
    ),
    "mark_tool_call": _worker_agent(
        lambda w, h, ar: _tool(w, h, ar, "select * from pgflight.mark_tool_call(%s, %s, %s, %s)")
    ),
    "complete_tool_call": _worker_agent(
        lambda w, h, ar: (
            lambda q, args: (
                q,
                [*args, Jsonb({"type": "tool_result", "tool_use_id": args[3], "content": "ok"})],
            )
        )(*_tool(w, h, ar, "select * from pgflight.complete_tool_call(%s, %s, %s, %s, %s)"))
    ),
    "complete_tool_calls": _worker_agent(
        lambda w, h, ar: (
            lambda q, args: (
                "select * from pgflight.complete_tool_calls(%s, %s, %s, %s, null, null)",
                [*args[:3], Jsonb([{"type": "tool_result", "tool_use_id": args[3], "content": "ok"}])],
            )
        )(*_tool(w, h, ar, ""))
    ),
    "load_transcript": _worker_agent(
        lambda w, h, ar: (
            "select * from pgflight.load_transcript(%s, %s, %s)",
            [h["attempt_id"], h["token"], ar],
        )
    ),
    # operator lane
    "create_workspace": lambda w: ("select pgflight.create_workspace(%s, '{}')", [fresh("ws")]),
    "submit_run": lambda w: (
        "select * from pgflight.submit_run(%s, 'op', '{\"a\": 1}', '{}')",
        [w.workspace],
    ),
    "submit_runs": lambda w: (
        'select * from pgflight.submit_runs(%s, \'[{"recipe": "op", "input": {"a": 2},'
        ' "options": {"priority": 1, "idempotency_key": "k"}}]\', \'{"max_attempts": 2}\')',
        [w.workspace],
    ),
    "cancel_run": lambda w: ("select * from pgflight.cancel_run(%s, 'alice', 'why')", [w.submit()["run_id"]]),
    "cancel_step": lambda w: (
        "select * from pgflight.cancel_step(%s, 'alice', 'why')",
        [w.submit()["step_id"]],
    ),
    "approve": lambda w: (
        "select * from pgflight.approve(%s, 'approve', 'alice', 'ok', null, '{\"to\": \"depot\"}')",
        [w.submit()["step_id"]],
    ),
    "retry_step": lambda w: (
        "select pgflight.retry_step(%s, 'alice', 'again')",
        [w.dead_letter()["step_id"]],
    ),
    "fork_agent": lambda w: (
        "select * from pgflight.fork_agent(%s, 1, '{\"system\": \"s\"}', 'why')",
        [_agent_with_a_call(w)["step_id"]],
    ),
    "replay_from": lambda w: (
        "select pgflight.replay_from(%s, 'alice', 'again')",
        [w.finished_run()["step_id"]],
    ),
    "wake_parents": lambda w: ("select pgflight.wake_parents(10)", []),
    "expire_approvals": lambda w: ("select pgflight.expire_approvals(10)", []),
    "reclaim_expired": lambda w: ("select pgflight.reclaim_expired(10)", []),
    "enforce_budgets": lambda w: ("select pgflight.enforce_budgets(10)", []),
    "purge_finished": lambda w: ("select pgflight.purge_finished(3600, 10)", []),
    "run_sweeps": lambda w: ("select * from pgflight.run_sweeps()", []),
    "maintain_partitions": lambda w: ("select * from pgflight.maintain_partitions(10)", []),
    # blast radius: the cost of a paid call whose lease was lost
    "record_orphan_cost": _worker_agent(
        lambda w, h, ar: (
            "select * from pgflight.record_orphan_cost(%s, %s, %s, 2, '{\"input_tokens\": 10}',"
            " 'claude-haiku-4-5', '{}')",
            [h["attempt_id"], h["token"], ar],
        )
    ),
    # flow control, on a workspace and recipes of their own (a pause or a cap on the
    # world's workspace would starve the calls that follow)
    "set_workspace_limits": lambda w: (
        "select * from pgflight.set_workspace_limits(%s, '{\"max_in_flight\": 5}')",
        [_flow_workspace(w)],
    ),
    "set_recipe_limits": lambda w: (
        "select * from pgflight.set_recipe_limits('rated', '{\"starts_per_s\": 5}')",
        [],
    ),
    "set_global_limits": lambda w: ("select * from pgflight.set_global_limits('{}')", []),
    "pause_workspace": lambda w: ("select pgflight.pause_workspace(%s, 'why')", [_flow_workspace(w)]),
    "resume_workspace": lambda w: ("select pgflight.resume_workspace(%s, 'why')", [_flow_workspace(w)]),
    "pause_recipe": lambda w: ("select pgflight.pause_recipe('paused', 'why')", []),
    "resume_recipe": lambda w: ("select pgflight.resume_recipe('paused', 'why')", []),
    "schedule_run": lambda w: (
        "select * from pgflight.schedule_run(%s, %s, '0 * * * *', 'op', '{}', '{}')",
        [w.workspace, fresh("sched")],
    ),
    "unschedule_run": lambda w: ("select pgflight.unschedule_run(%s, 'no-such-schedule')", [w.workspace]),
    "fire_schedules": lambda w: ("select pgflight.fire_schedules(10)", []),
    "wake_parked_keys": lambda w: ("select pgflight.wake_parked_keys(10)", []),
    "wake_ticket_key": lambda w: ("select pgflight.wake_ticket_key(42)", []),
}


def _claimed_only(w: World, query: str) -> tuple[str, list[Any]]:
    """A step claimed (not started) by the login's worker."""
    sub = w.submit()
    row = w.me.execute(
        "select attempt_id, fencing_token from pgflight.claim_batch(%s, 1, 60, %s)",
        [w.worker_id, [sub["recipe"]]],
    ).fetchone()
    assert row is not None
    return query, [row[0], row[1]]
