"""
Tools for the tool-policy tests (imported by worker subprocesses via ``--recipes
tool_policy_recipes``): a side-effecting ``transfer`` that writes the arguments it ran with to a
test table through its own connection, and a harmless ``lookup``. The agent recipe is pgflight's
own (``agent``, registered by importing pgflight.agent.loop).
"""

from __future__ import annotations

import os
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from pydantic import BaseModel

import pgflight.agent.loop  # noqa: F401  (registers the agent recipe)
from pgflight.agent.tools import ToolContext, tool

RAN_TABLE = "public.tool_policy_runs"
RAN_DDL = (
    f"create table if not exists {RAN_TABLE} (n bigserial primary key, step_id bigint not null,"
    " tool_use_id text not null, tool text not null, arguments jsonb not null)"
)


class Transfer(BaseModel):
    to: str
    usd: int


class Lookup(BaseModel):
    account: str


def _ran(tool_name: str, args: BaseModel, ctx: ToolContext) -> int:
    with psycopg.connect(os.environ["PGFLIGHT_DSN"], autocommit=True) as conn:
        conn.execute(RAN_DDL)
        row = conn.execute(
            f"insert into {RAN_TABLE} (step_id, tool_use_id, tool, arguments)"
            " values (%s, %s, %s, %s) returning n",
            [ctx.step.step_id, ctx.tool_use_id, tool_name, Jsonb(args.model_dump())],
        ).fetchone()
    assert row is not None
    return int(row[0])


@tool(side_effects=True, description="Transfer money to an account (a side effect).")
def transfer(args: Transfer, ctx: ToolContext) -> Any:
    n = _ran("transfer", args, ctx)
    return {"transferred": args.usd, "to": args.to, "receipt": n}


@tool(description="Look an account up.")
def lookup(args: Lookup, ctx: ToolContext) -> Any:
    _ran("lookup", args, ctx)
    return {"account": args.account, "open": True}
