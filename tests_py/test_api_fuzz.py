"""
Every API function called with extreme and malformed values for every argument and
option (NaN, +/-Infinity, 1e300, negatives, zero, huge strings, deep JSON, wrong JSON types,
unknown keys). Each call may succeed or refuse, but only with 22023 or one of pgflight's own ZF
codes; and after each call an unrelated submit -> claim -> complete and run_sweeps must succeed.
Prints the number of distinct inputs tried.

Values that cannot reach a function at all (a text with NUL, 1e300 for an integer parameter, a
bare NaN inside JSON) are refused by PostgreSQL's parameter parsing before the API runs; they are
not sent here (complete_batch's text[] form, which does take NaN JSON, is covered by
test_blast_radius_sql).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.types.json import Jsonb

from core_helpers import Conn, claim_one, complete, one, register, scalar, setup_engine, submit

# (function, parameter kinds); an option kind names its scope in pgflight._option_spec()
API: list[tuple[str, list[str]]] = [
    ("submit_run", ["text", "text", "jsonb", "opts:submit_run"]),
    ("claim_batch", ["worker", "int4", "float8", "text[]", "opts:claim_batch"]),
    ("heartbeat", ["worker", "attempt[]", "token[]"]),
    ("start_step", ["attempt", "token"]),
    ("complete_step", ["attempt", "token", "jsonb"]),
    ("complete_batch", ["attempt[]", "token[]", "jsonb[]"]),
    ("fail_step", ["attempt", "token", "jsonb", "opts:fail_step"]),
    ("release_step", ["attempt", "token", "text", "opts:release_step"]),
    ("spawn_children", ["attempt", "token", "children", "opts:spawn_children"]),
    ("request_approval", ["attempt", "token", "text", "jsonb", "opts:request_approval"]),
    ("approve", ["step", "text", "text", "text", "text"]),
    ("cancel_run", ["run", "text", "text"]),
    ("cancel_step", ["step", "text", "text"]),
    ("retry_step", ["step", "text", "text"]),
    ("replay_from", ["step", "text", "text"]),
    ("register_worker", ["text", "opts:register_worker"]),
    ("create_workspace", ["text", "opts:create_workspace"]),
    ("record_effect", ["attempt", "token", "text", "jsonb"]),
    ("find_effect", ["step", "text"]),
    ("run_status", ["run"]),
    ("children_results", ["step"]),
    ("run_audit", ["run"]),
    ("reclaim_expired", ["int4"]),
    ("wake_parents", ["int4"]),
    ("expire_approvals", ["int4"]),
    ("enforce_budgets", ["int4"]),
    ("purge_finished", ["float8", "int4"]),
    ("record_stale_write", ["attempt", "token", "text"]),
    ("begin_agent_run", ["attempt", "token", "opts:begin_agent_run"]),
    ("reserve_budget", ["attempt", "token", "agent", "int4", "numeric"]),
    (
        "record_model_call",
        ["attempt", "token", "agent", "int4", "jsonb", "jsonb", "text", "opts:record_model_call", "numeric"],
    ),
    ("record_orphan_cost", ["attempt", "token", "agent", "int4", "jsonb", "text", "opts:record_orphan_cost"]),
    ("record_trace", ["attempt", "token", "agent", "int4", "text", "text", "jsonb", "opts:record_trace"]),
    ("mark_tool_call", ["attempt", "token", "agent", "text"]),
    ("complete_tool_call", ["attempt", "token", "agent", "text", "jsonb"]),
    ("complete_tool_calls", ["attempt", "token", "agent", "jsonb", "int4", "numeric"]),
    ("load_transcript", ["attempt", "token", "agent"]),
    ("price_usd", ["text", "jsonb"]),
    ("agent_run_of", ["step"]),
    ("agent_runs_by_status", ["text", "int8", "int4"]),
    ("agent_transcript", ["agent"]),
]
SQL_TYPE = {
    "text": "text", "jsonb": "jsonb", "int4": "integer", "int8": "bigint", "float8": "double precision",
    "numeric": "numeric", "text[]": "text[]", "attempt[]": "bigint[]", "token[]": "bigint[]",
    "jsonb[]": "jsonb[]", "worker": "bigint", "attempt": "bigint", "token": "bigint", "step": "bigint",
    "run": "bigint", "agent": "bigint", "children": "jsonb",
}  # fmt: skip

INT4 = [0, 1, -1, 2**31 - 1, -(2**31), None]
INT8 = [0, 1, -1, 2**63 - 1, -(2**63), None]
FLOATS = [math.nan, math.inf, -math.inf, 1e300, -1e300, 0.0, -1.0, 1e-300, 1e10, 1.5, None]
TEXTS = ["", " ", "x", "core", "approve", "reject", "x" * 100_000, "é" * 3000, "'; drop table x; --", None]


def _deep(n: int) -> Any:
    v: Any = 1
    for _ in range(n):
        v = {"a": [v]}
    return v


JSON_SCALARS: list[Any] = [
    None, True, False, 0, -1, 1.5, 1e300, -1e300, 3.0, 2**64, 10**400, "", "maybe", "5",
    "x" * 50_000, "2030-01-01T00:00:00Z", "infinity", [], [1, "a"], {}, {"a": 1},
]  # fmt: skip
json_values = st.one_of(
    st.sampled_from(JSON_SCALARS),
    st.just(_deep(200)),
    st.lists(st.sampled_from(JSON_SCALARS), max_size=3),
    st.dictionaries(
        st.sampled_from(["type", "key", "recipe", "input", "id", "x"]),
        st.sampled_from(JSON_SCALARS),
        max_size=3,
    ),
)


class Ctx:
    """The ids a call may name: a held attempt (with its agent run), kept fresh between calls."""

    def __init__(self, conn: Conn) -> None:
        self.conn = conn
        self.w = register(conn, "fuzz")
        self.refresh()

    def refresh(self) -> None:
        c = self.conn
        running = c.execute(
            "select a.id from pgflight.step_attempts a where a.id = %s and a.status = 'running'",
            [getattr(self, "attempt", None)],
        ).fetchone()
        if running:
            return
        s = submit(c, "fuzz-held", workspace="held")
        w = int(scalar(c, "select pgflight.register_worker('fuzz-holder')"))
        h = claim_one(c, w, 600, ["fuzz-held"])
        self.attempt, self.token, self.step, self.run, self.worker = (
            h.attempt_id,
            h.token,
            s.step_id,
            s.run_id,
            w,
        )
        self.agent = scalar(
            c,
            "select agent_run_id from pgflight.begin_agent_run(%s, %s, %s)",
            [h.attempt_id, h.token, Jsonb({"model": "claude-haiku-4-5", "task": "t"})],
        )


def _opts(scope: str, keys: dict[str, list[str]]) -> st.SearchStrategy[Any]:
    known = [*keys.get(scope, []), "maxattempts", "retry_after", "", "x" * 300]
    obj = st.dictionaries(st.sampled_from(known), json_values, max_size=4)
    return st.one_of(obj, obj, st.sampled_from([None, [], "x", 1, True]))


def _arg(kind: str, ctx: Ctx, keys: dict[str, list[str]]) -> st.SearchStrategy[Any]:
    if kind.startswith("opts:"):
        return _opts(kind[5:], keys).map(lambda v: None if v is None else Jsonb(v))
    ref = {
        "attempt": "attempt",
        "token": "token",
        "step": "step",
        "run": "run",
        "worker": "worker",
        "agent": "agent",
    }
    if kind in ref:
        return st.one_of(st.sampled_from(INT8), st.just(ref[kind]).map(lambda k: getattr(ctx, k)))
    if kind in ("attempt[]", "token[]"):
        one_id = _arg(kind[:-2], ctx, keys)
        return st.one_of(st.none(), st.lists(one_id, max_size=3))
    return {
        "text": st.sampled_from(TEXTS),
        "int4": st.sampled_from(INT4),
        "int8": st.sampled_from(INT8),
        "float8": st.sampled_from(FLOATS),
        "numeric": st.sampled_from(FLOATS),
        "text[]": st.one_of(st.none(), st.lists(st.sampled_from(TEXTS[:-1]), max_size=3)),
        "jsonb": json_values.map(Jsonb),
        "jsonb[]": st.one_of(st.none(), st.lists(json_values.map(Jsonb), max_size=3)),
        "children": st.one_of(
            json_values,
            st.lists(
                st.fixed_dictionaries(
                    {
                        "key": st.sampled_from(["a", "b", "", "x" * 1000]),
                        "recipe": st.sampled_from(["fuzz-child", ""]),
                    },
                    optional={"options": _opts("step", keys), "input": json_values},
                ),
                max_size=3,
            ),
        ).map(Jsonb),
    }[kind]


def _unrelated_work(conn: Conn) -> None:
    """A submit -> claim -> complete that has nothing to do with the call, and run_sweeps."""
    w = register(conn, "bystander")
    s = submit(conn, "bystander", {"n": 1}, workspace="bystanders")
    c = claim_one(conn, w, 30, ["bystander"])
    complete(conn, c, {"ok": True})
    assert (
        one(conn, "select status from pgflight.step_attempts where id = %s", [s.attempt_id])["status"]
        == "succeeded"
    )
    conn.execute("select pgflight.run_sweeps()")


def _describe(v: Any) -> str:
    if isinstance(v, Jsonb):
        v = v.obj
    try:
        text = json.dumps(v, default=str, allow_nan=True)
    except (ValueError, RecursionError):
        text = repr(v)
    return text if len(text) < 200 else f"{text[:60]}...<{len(text)} chars>"


def test_api_fuzz_only_22023_or_zf_and_unrelated_work_flows(
    conn: Conn, capsys: pytest.CaptureFixture[str]
) -> None:
    setup_engine(conn)
    setup_engine(conn, "bystanders")
    setup_engine(conn, "held")
    conn.execute("set statement_timeout = '10s'")
    keys: dict[str, list[str]] = {}
    for scope, key in conn.execute("select scope, key from pgflight._option_spec()").fetchall():
        keys.setdefault(scope, []).append(key)
    for scope in ("submit_run", "spawn_children child"):
        keys[scope] = keys.get(scope, []) + keys["step"]
    keys["step"] = keys["step"] + keys["backoff"]
    ctx = Ctx(conn)
    tried: set[str] = set()
    escaped: list[str] = []

    def call(fn: str, kinds: list[str], args: list[Any]) -> None:
        casts = ", ".join(f"%s::{SQL_TYPE[k.split(':')[0]] if ':' not in k else 'jsonb'}" for k in kinds)
        sig = f"{fn}({', '.join(_describe(a) for a in args)})"
        tried.add(sig)
        try:
            conn.execute(f"select * from pgflight.{fn}({casts})", args)
        except psycopg.Error as e:
            state = e.sqlstate or "?"
            if state != "22023" and not state.startswith("ZF"):
                escaped.append(f"{state} {e.diag.message_primary} <- {sig}")
        ctx.refresh()
        _unrelated_work(conn)

    strategies: list[tuple[str, list[str], Callable[[], st.SearchStrategy[list[Any]]]]] = [
        (fn, kinds, lambda kinds=kinds: st.tuples(*(_arg(k, ctx, keys) for k in kinds)).map(list))
        for fn, kinds in API
    ]

    @settings(max_examples=450, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        fn, kinds, strat = data.draw(st.sampled_from(strategies))
        call(fn, kinds, data.draw(strat()))

    run()
    with capsys.disabled():
        print(f"\napi fuzz: {len(tried)} distinct inputs tried over {len(API)} API functions")
    assert not escaped, "\n".join(sorted(set(escaped))[:40])
