"""Tools for the agent tests (imported by worker subprocesses via PYTHONPATH, with pgflight.agent.loop)."""

from __future__ import annotations

import os
import signal
import urllib.request
from typing import Any

from pydantic import BaseModel

import pgflight.agent.loop  # noqa: F401  (registers the agent recipe and the delegate tool)
from pgflight.agent.tools import ToolContext, tool
from pgflight.db import agent as adb

if os.environ.get("AGENT_TEST_KILL_AFTER_EMPTY_RECORD"):
    # The worker dies (SIGKILL) right after record_model_call committed an iteration with no
    # content, on attempt 1: the crash between recording an empty end_turn and completing the step.
    _record = adb.record_model_call

    def _record_then_die(
        conn: Any,
        attempt_id: int,
        token: int,
        agent_run_id: int,
        iteration: int,
        blocks: Any,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        rec = _record(conn, attempt_id, token, agent_run_id, iteration, blocks, *args, **kwargs)
        attempt_no = conn.execute(
            "select attempt_no from pgflight.step_attempts where id = %s", [attempt_id]
        ).fetchone()
        if not blocks and rec.recorded and attempt_no is not None and attempt_no[0] == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return rec

    adb.record_model_call = _record_then_die  # type: ignore[assignment]


class Note(BaseModel):
    text: str


@tool(description="Write a note; returns it upper-cased.")
def note(args: Note) -> str:
    return args.text.upper()


class Crash(BaseModel):
    at_iteration: int


@tool(description="Kill this worker process (SIGKILL) when called in the given iteration on attempt 1.")
def crash(args: Crash, ctx: ToolContext) -> str:
    if ctx.iteration == args.at_iteration and ctx.step.attempt_no == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return "survived"


class Charge(BaseModel):
    url: str


@tool(
    side_effects=True,
    description="Charge once through an external HTTP service; crashes the worker "
    "right after the effect on attempt 1.",
)
def charge(args: Charge, ctx: ToolContext) -> Any:
    with urllib.request.urlopen(urllib.request.Request(args.url, method="POST", data=b"{}"), timeout=5) as r:
        body = r.read().decode()
    if ctx.step.attempt_no == 1:
        # die after the effect ran but before its receipt is recorded? No: the receipt is recorded
        # by ctx.effect when this returns; crash in the *next* tool instead (see test).
        pass
    return {"charged": body}


@tool(
    side_effects=True,
    description="Charge through an external HTTP service; on attempt 1 the worker "
    "dies right after the charge's receipt is recorded.",
)
def charge_then_die(args: Charge, ctx: ToolContext) -> Any:
    def post() -> Any:
        import json

        with urllib.request.urlopen(
            urllib.request.Request(args.url, method="POST", data=b"{}"), timeout=5
        ) as r:
            return json.loads(r.read())

    receipt = ctx.step.effect(f"tool:{ctx.tool_use_id}", post)
    if ctx.step.attempt_no == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return receipt
