"""Tools for the agent ledger tests (imported by worker subprocesses via PYTHONPATH)."""

from __future__ import annotations

from pydantic import BaseModel

import agent_recipes  # noqa: F401  (the agent recipe and the shared test tools)
from pgflight.agent.tools import tool


class Bulk(BaseModel):
    kb: int


@tool(description="Fetch a document of the given size in kilobytes (1 KB = 1,000 bytes).")
def bulk(args: Bulk) -> str:
    return "x" * (args.kb * 1000)
