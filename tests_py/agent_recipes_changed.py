"""The agent test recipe with its note tool changed: it no longer upper-cases a note that says n2."""

from __future__ import annotations

import agent_recipes  # noqa: F401  (the agent recipe and the tools as recorded)
from agent_recipes import Note
from pgflight.agent.tools import tool


@tool("note", description="Write a note; returns it upper-cased (but n2 as it is).")
def note(args: Note) -> str:
    return args.text if args.text == "n2" else args.text.upper()
