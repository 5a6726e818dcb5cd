"""
The numbering of an agent transcript's blocks within one iteration (``pgflight.traces.seq``), in
three bands, as the SQL functions write them (docs/agents.md, "The transcript's numbering"):

- ``0 .. k``: the model's response, block by block (text, tool_use ...), :data:`RESPONSE`;
- ``1000 + j``: the tool_result of the tool_use at seq ``j`` (mark_tool_call,
  complete_tool_call), :data:`TOOL_RESULTS`;
- ``2000`` and on: blocks of the system (an ``api_error`` record_trace writes),
  :data:`SYSTEM`.
"""

from __future__ import annotations

from typing import Final

TOOL_RESULTS: Final = 1000
"""The first seq of the tool results' band: a tool_use at seq j has its result at TOOL_RESULTS + j."""

SYSTEM: Final = 2000
"""The first seq of the system band (record_trace's default: the next free seq from here)."""


def is_response(seq: int) -> bool:
    """A block of the model's own response (0 .. k)."""
    return seq < TOOL_RESULTS


def is_tool_result(seq: int) -> bool:
    """A tool_result block (1000 + the seq of its tool_use)."""
    return TOOL_RESULTS <= seq < SYSTEM


def result_seq(use_seq: int) -> int:
    """The seq of the tool_result of the tool_use at `use_seq`."""
    return TOOL_RESULTS + use_seq
