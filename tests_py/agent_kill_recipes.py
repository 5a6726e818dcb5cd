"""
The agent recipe for crash tests: a worker process that SIGKILLs itself at a named phase of the
agent loop, and two side-effecting tools that write their effect to a test table through their
own connection (imported by worker subprocesses via ``--recipes agent_kill_recipes``).

Environment of the worker that is to die (the worker that resumes has none of it):

- ``AGENT_KILL_AT=<phase>:<iteration>``: die at that phase of that iteration:

  ============== =====================================================================
  before_request the call is admitted, its request not yet sent
  before_record  the answer is in, record_model_call not yet called
  after_record   record_model_call committed, no tool call of the iteration marked yet
  after_mark     the first tool call of the iteration is marked in flight, not started
  in_effect      the first tool's effect is written (its own transaction), no receipt yet
  after_receipt  the first tool's effect receipt is recorded, its result not yet stored
  before_mark_2  the first tool call's result is computed, the second not yet marked
  after_results  complete_tool_calls committed (results stored, next call admitted)
  ============== =====================================================================

  (The phase "request out, no answer yet" is the Messages API server's to play: it kills the
  worker when the request arrives.)
- ``AGENT_KILL_AFTER_S=<seconds>``: die that long after the agent run begins (a random kill).
- ``AGENT_RECIPES=a,b``: more recipe names that run the agent recipe (besides ``agent_kill``), so
  that a worker started for one trial claims only that trial's step.
- ``AGENT_EVENTS=<path>``: one line per model call recorded (``record <agent run> <iteration>``)
  and per tool call marked in flight (``mark <agent run> <tool_use_id>``), written once committed.

Tool call ids are ``toolu_<iteration>_<n>`` (n = 1, 2, ... within the iteration): the hooks read
the iteration from them.
"""

from __future__ import annotations

import functools
import os
import signal
import threading
from typing import Any

import psycopg
from pydantic import BaseModel

import pgflight.agent.loop as loop
from pgflight import db
from pgflight.agent import providers as prov
from pgflight.agent.tools import ToolContext, tool
from pgflight.db import agent as adb
from pgflight.recipes import StepContext, recipe

EFFECTS_TABLE = "public.agent_test_effects"
EFFECTS_DDL = (
    f"create table if not exists {EFFECTS_TABLE} (n bigserial primary key, step_id bigint not null,"
    " tool_use_id text not null, tool text not null, attempt_id bigint not null)"
)

_kill = os.environ.get("AGENT_KILL_AT", "")
PHASE, _, _it = _kill.partition(":")
KILL_ITERATION = int(_it) if _it else 0
KILL_AFTER_S = float(os.environ.get("AGENT_KILL_AFTER_S") or 0)
EVENTS = os.environ.get("AGENT_EVENTS")


def die() -> None:
    """A real crash: SIGKILL this worker process (no cleanup, no release)."""
    os.kill(os.getpid(), signal.SIGKILL)


def die_at(phase: str, iteration: int) -> None:
    if phase == PHASE and iteration == KILL_ITERATION:
        die()


def _event(line: str) -> None:
    if EVENTS:
        fd = os.open(EVENTS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)


def _id_parts(tool_use_id: str) -> tuple[int, int]:
    """(iteration, n) of a tool call id toolu_<iteration>_<n>; (0, 0) for any other id."""
    parts = tool_use_id.split("_")
    try:
        return int(parts[-2]), int(parts[-1])
    except (IndexError, ValueError):
        return 0, 0


# --- the hooks: wrappers of the client functions the loop calls --------------------------------

_create = prov.create_with_retries
_begin = adb.begin_agent_run
_record = adb.record_model_call
_mark = adb.mark_tool_call
_complete = adb.complete_tool_calls
_record_effect = db.record_effect


def _create_hook(provider: Any, request: prov.Request, **kwargs: Any) -> Any:
    iteration = sum(1 for m in request.messages if m["role"] == "assistant") + 1
    die_at("before_request", iteration)
    return _create(provider, request, **kwargs)


def _begin_hook(*args: Any, **kwargs: Any) -> Any:
    if KILL_AFTER_S > 0:
        t = threading.Timer(KILL_AFTER_S, die)
        t.daemon = True
        t.start()
    return _begin(*args, **kwargs)


def _record_hook(
    conn: Any, attempt_id: int, token: int, agent_run_id: int, iteration: int, *a: Any, **k: Any
) -> Any:
    die_at("before_record", iteration)
    rec = _record(conn, attempt_id, token, agent_run_id, iteration, *a, **k)
    if rec.recorded:
        _event(f"record {agent_run_id} {iteration}")
    die_at("after_record", iteration)
    return rec


def _mark_hook(conn: Any, attempt_id: int, token: int, agent_run_id: int, tool_use_id: str) -> Any:
    iteration, n = _id_parts(tool_use_id)
    if n == 2:
        die_at("before_mark_2", iteration)
    mark = _mark(conn, attempt_id, token, agent_run_id, tool_use_id)
    _event(f"mark {agent_run_id} {tool_use_id}")
    if n == 1:
        die_at("after_mark", iteration)
    return mark


def _complete_hook(*args: Any, **kwargs: Any) -> Any:
    out = _complete(*args, **kwargs)
    next_iteration = kwargs.get("next_iteration")
    if next_iteration is not None:
        die_at("after_results", next_iteration - 1)
    return out


def _record_effect_hook(conn: Any, attempt_id: int, token: int, key: str, *a: Any, **k: Any) -> Any:
    out = _record_effect(conn, attempt_id, token, key, *a, **k)
    iteration, n = _id_parts(key)
    if key.startswith("tool:") and n == 1:
        die_at("after_receipt", iteration)
    return out


if PHASE or KILL_AFTER_S > 0 or EVENTS:  # only in a worker started to die (not in the test process)
    prov.create_with_retries = functools.wraps(_create)(_create_hook)  # type: ignore[assignment]
    adb.begin_agent_run = functools.wraps(_begin)(_begin_hook)  # type: ignore[assignment]
    adb.record_model_call = functools.wraps(_record)(_record_hook)  # type: ignore[assignment]
    adb.mark_tool_call = functools.wraps(_mark)(_mark_hook)  # type: ignore[assignment]
    adb.complete_tool_calls = functools.wraps(_complete)(_complete_hook)  # type: ignore[assignment]
    db.record_effect = functools.wraps(_record_effect)(_record_effect_hook)  # type: ignore[assignment]


# --- the tools ---------------------------------------------------------------------------------


class Amount(BaseModel):
    amount: int


def _effect(tool_name: str, ctx: ToolContext) -> dict[str, Any]:
    """Write the effect (a row of the test table) through this tool's own connection."""
    with psycopg.connect(os.environ["PGFLIGHT_DSN"], autocommit=True) as conn:
        conn.execute(EFFECTS_DDL)
        row = conn.execute(
            f"insert into {EFFECTS_TABLE} (step_id, tool_use_id, tool, attempt_id) values (%s, %s, %s, %s)"
            " returning n",
            [ctx.step.step_id, ctx.tool_use_id, tool_name, ctx.step.attempt_id],
        ).fetchone()
    assert row is not None
    iteration, n = _id_parts(ctx.tool_use_id)
    if n == 1:
        die_at("in_effect", iteration)
    return {"effect_no": row[0]}


def _effect_done(ctx: ToolContext) -> dict[str, Any] | None:
    """The verify hook: the effect row of this call if it was written, else None (run it)."""
    with psycopg.connect(os.environ["PGFLIGHT_DSN"], autocommit=True) as conn:
        conn.execute(EFFECTS_DDL)
        row = conn.execute(
            f"select n from {EFFECTS_TABLE} where step_id = %s and tool_use_id = %s",
            [ctx.step.step_id, ctx.tool_use_id],
        ).fetchone()
    return None if row is None else {"effect_no": row[0]}


@tool(
    side_effects=True,
    verify=lambda args, ctx: _effect_done(ctx),
    description="Charge an amount (a side effect, with a verify hook that looks it up).",
)
def pay(args: Amount, ctx: ToolContext) -> Any:
    return _effect("pay", ctx)


@tool(side_effects=True, description="Ship an order (a side effect kept by its receipt alone).")
def ship(args: Amount, ctx: ToolContext) -> Any:
    return _effect("ship", ctx)


def run_agent(ctx: StepContext) -> dict[str, Any]:
    """The agent recipe's body, for the names in AGENT_RECIPES."""
    return loop.AgentLoop(ctx, ctx.input).run()


for _name in ["agent_kill", *filter(None, os.environ.get("AGENT_RECIPES", "").split(","))]:
    recipe(_name, input=loop.AgentInput)(run_agent)
