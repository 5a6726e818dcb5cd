"""
Recorded agent runs as regression tests of a recipe.

:func:`replay_agent` re-runs the tool calls of a recorded agent against its recorded model
responses: no model call, no cost, and nothing written (it reads the transcript through the reader
lane's ``agent_run_of`` and ``agent_transcript``). For each iteration in order, each tool call the
model made is checked against the tools as they are now: the tool must still be offered, its
recorded arguments must still validate, and a tool without side effects is run again and must
give the result that was recorded (the result the next iteration was sent). The first difference
is reported with its iteration; after it the recorded responses no longer follow from what the
recipe would send, so nothing later is compared.

Tools with side effects (``side_effects=True``) are not run: their recorded result stands, their
arguments are still checked. A tool that needs the step (``ctx.step``: spawn, approvals, effects)
is not run either. Keep a few recorded runs as tests of a recipe (docs/agents.md)::

    def test_the_review_recipe_still_makes_the_recorded_calls(conn):
        import myapp.recipes  # registers the tools as they are now
        assert_replays(conn, RECORDED_STEP)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from pgflight import transcript
from pgflight.agent.tools import TOOLS, Tool, ToolContext, result_text
from pgflight.db import agent as adb
from pgflight.db.core import Connection
from pgflight.models_agent import AgentRunInfo, TraceRow

INTERRUPTED_PREFIX = "The call was interrupted by a crash"

#: recipe name -> the tools its agent was offered, rebuilt from the agent run (for a recipe that
#: binds its tools per step, like the review's documents, instead of registering them globally)
ToolsFactory = Callable[[AgentRunInfo], dict[str, Tool]]
_REPLAY_TOOLS: dict[str, ToolsFactory] = {}


def register_replay_tools(recipe: str, factory: ToolsFactory) -> None:
    """
    Tell :func:`replay_agent` how to rebuild the tools of `recipe`'s agents when they are not the
    process-wide registry: ``factory(agent_run_of row) -> {name: Tool}`` (its ``result`` is the
    step's last result). Call it in the recipe module, beside the recipe.
    """
    _REPLAY_TOOLS[recipe] = factory


@dataclass(frozen=True)
class Divergence:
    """Where a replay first differs from the record: the iteration, the tool call and what differs."""

    iteration: int
    tool_use_id: str
    tool: str
    what: str
    recorded: Any = None
    replayed: Any = None


@dataclass(frozen=True)
class ReplayReport:
    """The replay of one recorded agent."""

    step_id: int
    agent_run_id: int
    iterations: int  # iterations replayed (all of them when clean)
    tool_calls: int  # tool calls checked
    skipped: int  # calls not run again (side effects, the step needed, interrupted): arguments checked only
    divergence: Divergence | None

    @property
    def clean(self) -> bool:
        """True when every tool call of every iteration is as recorded."""
        return self.divergence is None

    def describe(self) -> str:
        """One paragraph for a person: clean, or where and how the replay differs."""
        head = (
            f"agent run {self.agent_run_id} (step {self.step_id}): {self.iterations} iterations, "
            f"{self.tool_calls} tool calls checked ({self.skipped} not run again)"
        )
        d = self.divergence
        if d is None:
            return head + ": replays clean"
        text = f"{head}: diverges at iteration {d.iteration}, tool call {d.tool_use_id} ({d.tool}): {d.what}"
        if d.recorded is not None or d.replayed is not None:
            text += f"\n  recorded: {_short(d.recorded)}\n  replayed: {_short(d.replayed)}"
        return text


class _NoStep:
    """The step a replayed tool sees: any use of it means the tool cannot be replayed offline."""

    def __getattr__(self, name: str) -> Any:
        raise _NeedsStep(name)


class _NeedsStep(Exception):
    pass


def replay_agent(conn: Connection, step_id: int, *, registry: dict[str, Tool] | None = None) -> ReplayReport:
    """
    Replay the recorded agent of `step_id` against the tools of `registry` (default: the tools
    :func:`register_replay_tools` rebuilds for the step's recipe, else every tool registered in
    this process, i.e. the recipes imported).

    :return: the report; ``report.divergence`` is None when the replay is clean.
    :raises LookupError: the step has no agent run (or is not readable by this login).
    """
    info = adb.agent_run_of(conn, step_id)
    if info is None:
        raise LookupError(f"step {step_id} has no agent run")
    rows = adb.agent_transcript(conn, info.agent_run_id)
    tools = TOOLS if registry is None else registry
    if registry is None:
        got = conn.execute("select recipe from pgflight.step_status where step_id = %s", [step_id]).fetchone()
        factory = _REPLAY_TOOLS.get(str(got[0])) if got else None
        if factory is not None:
            tools = factory(info)
    by_it: dict[int, list[TraceRow]] = {}
    for r in rows:
        by_it.setdefault(r.iteration, []).append(r)
    checked = skipped = 0
    last = max((i for i in by_it if i > 0), default=0)
    for i in range(1, last + 1):
        blocks = by_it.get(i, [])
        results = {
            r.tool_use_id: r
            for r in blocks
            if r.block_type == "tool_result" and not transcript.is_response(r.seq) and r.tool_use_id
        }
        uses = [
            r
            for r in blocks
            if r.block_type == "tool_use" and transcript.is_response(r.seq) and isinstance(r.content, dict)
        ]
        for u in uses:
            checked += 1
            d, ran = _check_call(info.agent_run_id, i, u.content, results.get(u.tool_use_id or ""), tools)
            skipped += 0 if ran else 1
            if d is not None:
                return ReplayReport(step_id, info.agent_run_id, i, checked, skipped, d)
    return ReplayReport(step_id, info.agent_run_id, last, checked, skipped, None)


def assert_replays(
    conn: Connection, step_id: int, *, registry: dict[str, Tool] | None = None
) -> ReplayReport:
    """
    :func:`replay_agent`, failing the test with the divergence described when there is one.

    :raises AssertionError: the replay diverges.
    """
    report = replay_agent(conn, step_id, registry=registry)
    if not report.clean:
        raise AssertionError(report.describe())
    return report


def _check_call(
    agent_run_id: int, iteration: int, use: dict[str, Any], recorded: TraceRow | None, tools: dict[str, Tool]
) -> tuple[Divergence | None, bool]:
    """One recorded tool call against the tool as it is now: (the divergence or None, whether it ran)."""
    tid, name = str(use.get("id")), str(use.get("name"))
    t = tools.get(name)
    rec_text = _recorded_text(recorded)
    if t is None:
        return Divergence(iteration, tid, name, f"the tool {name!r} is not offered any more"), False
    try:
        args = t.args_model.model_validate(use.get("input", {}))
    except ValidationError as e:
        if rec_text is not None and rec_text.startswith(f"invalid arguments for {name}"):
            return None, False  # refused then, refused now
        return Divergence(
            iteration, tid, name, "its recorded arguments no longer validate", use.get("input"), str(e)
        ), False
    if t.side_effects or rec_text is None or rec_text.startswith(INTERRUPTED_PREFIX):
        return None, False  # not run again: an effect, or no result on record to compare
    try:
        out = result_text(t.call(args, ToolContext(_NoStep(), agent_run_id, iteration, tid)))
    except _NeedsStep:
        return None, False
    except Exception as e:  # the loop tells the model the same
        out = f"{type(e).__name__}: {e}"
    if out != rec_text:
        return Divergence(iteration, tid, name, "the tool now gives another result", rec_text, out), True
    return None, True


def _recorded_text(row: TraceRow | None) -> str | None:
    if row is None or not isinstance(row.content, dict):
        return None
    c = row.content.get("content")
    return c if isinstance(c, str) else json.dumps(c, default=str, sort_keys=True)


def _short(value: Any, n: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= n else text[:n] + "…"
