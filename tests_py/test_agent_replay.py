"""
A recorded agent replayed as a regression test of its recipe (pgflight.testing.replay_agent and
`pgflight replay-agent`): recorded through a real worker against a local Messages API server, then
replayed with no model call and nothing written. The recipe as recorded replays clean; a tool that
now answers otherwise diverges at the iteration of that call, and one whose arguments changed at
the first call that no longer validates.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from pydantic import BaseModel

import agent_recipes
from agent_support import fake_anthropic  # noqa: F401
from pgflight.agent.tools import TOOLS, Tool, tool
from pgflight.testing import assert_replays, replay_agent
from test_agent_fork import _by_iteration, _recorded
from test_cli import pgflight
from worker_support import one, workers  # noqa: F401

COUNTS = (
    "select (select count(*) from pgflight.traces), (select count(*) from pgflight.costs),"
    " (select count(*) from pgflight.events), (select usd from pgflight.agent_runs where step_id = %s)"
)


@pytest.fixture
def recorded(dsn: str, fake_anthropic: Any, workers: Any) -> tuple[int, Any]:
    """A finished 3-iteration agent (note n1, note n2, answer); (step id, the fake server)."""
    server = fake_anthropic(_by_iteration)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("select pgflight.create_workspace('w')")
    step_id, _ = _recorded(dsn, server, workers, "w")
    return step_id, server


class Body(BaseModel):
    body: str


@pytest.mark.slow
def test_a_recorded_run_replays_clean_and_a_changed_tool_diverges_at_its_iteration(
    dsn: str, recorded: tuple[int, Any]
) -> None:
    step_id, server = recorded
    asked = len(server.requests)
    with psycopg.connect(dsn, autocommit=True) as conn:
        before = conn.execute(COUNTS, [step_id]).fetchone()
        report = assert_replays(conn, step_id)
        assert (report.iterations, report.tool_calls, report.skipped) == (3, 2, 0)

        # the note tool now leaves "n2" as it is: the call of iteration 2 gives another result
        changed: dict[str, Tool] = dict(TOOLS)

        def note(args: agent_recipes.Note) -> str:
            return args.text if args.text == "n2" else args.text.upper()

        tool("note", registry=changed)(note)
        d = replay_agent(conn, step_id, registry=changed).divergence
        assert d is not None and (d.iteration, d.tool_use_id, d.tool) == (2, "tu2", "note")
        assert (d.recorded, d.replayed) == ("N2", "n2")

        # its argument renamed: the first call (iteration 1) no longer validates
        renamed: dict[str, Tool] = dict(TOOLS)

        def note_body(args: Body) -> str:
            return args.body.upper()

        tool("note", registry=renamed)(note_body)
        d = replay_agent(conn, step_id, registry=renamed).divergence
        assert d is not None and (d.iteration, d.tool_use_id) == (1, "tu1")
        assert "no longer validate" in d.what
        # a tool no longer offered
        gone = {k: v for k, v in TOOLS.items() if k != "note"}
        d = replay_agent(conn, step_id, registry=gone).divergence
        assert d is not None and d.iteration == 1 and "not offered" in d.what
        with pytest.raises(AssertionError, match="diverges at iteration 2"):
            assert_replays(conn, step_id, registry=changed)
        # no model call, nothing written
        assert conn.execute(COUNTS, [step_id]).fetchone() == before
    assert len(server.requests) == asked


@pytest.mark.slow
def test_pgflight_replay_agent_exits_1_at_the_iteration_a_changed_recipe_diverges(
    dsn: str, recorded: tuple[int, Any]
) -> None:
    step_id, _ = recorded
    clean = pgflight(dsn, "replay-agent", str(step_id), "--recipe", "agent_recipes")
    assert clean.returncode == 0, clean.stderr
    assert "replays clean" in clean.stdout
    diverged = pgflight(dsn, "replay-agent", str(step_id), "--recipe", "agent_recipes_changed")
    assert diverged.returncode == 1, diverged.stderr
    assert "diverges at iteration 2, tool call tu2 (note)" in diverged.stdout
    unknown = pgflight(dsn, "replay-agent", "999999", "--recipe", "agent_recipes")
    assert unknown.returncode == 4, unknown.stderr
