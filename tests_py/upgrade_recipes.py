"""Recipes of the upgrade test (imported by its worker subprocess via PYTHONPATH)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from pgflight.recipes import Fatal, StepContext, recipe

CHILDREN = [{"key": f"c{x}", "recipe": "up_square", "input": {"x": x}} for x in (1, 2, 3)]


class Square(BaseModel):
    x: int


@recipe("up_noop")
def noop(ctx: StepContext) -> Any:
    """Return the input unchanged."""
    return ctx.input


@recipe("up_square", input=Square)
def square(ctx: StepContext) -> int:
    return int(ctx.input.x) ** 2


@recipe("up_parent")
def parent(ctx: StepContext) -> dict[str, int]:
    """Spawn CHILDREN (parks; idempotent by key on the run after the wake), then sum their results."""
    ctx.spawn(CHILDREN)
    kids = ctx.children()
    if any(k.status != "succeeded" for k in kids):
        raise Fatal("a child did not succeed")
    return {"sum": sum(int(k.result) for k in kids)}


@recipe("up_gated")
def gated(ctx: StepContext) -> dict[str, str]:
    """Ask at gate 'release' and return the decision."""
    return {"decision": ctx.request_approval("release", {"what": "upgrade test"})}


@recipe("up_sleep")
def sleep(ctx: StepContext) -> dict[str, bool]:
    """Sleep at key 'nap' (parked before the upgrade, elapsed after it), then return."""
    ctx.sleep("nap", 1)
    return {"slept": True}


@recipe("up_event")
def event(ctx: StepContext) -> dict[str, Any]:
    """Wait for order.paid:7 and return its payload."""
    return {"paid": ctx.wait_event("order.paid", "7")}


@recipe("up_approval")
def approval(ctx: StepContext) -> dict[str, Any]:
    """Ask at gate 'ship' and return the decision with the payload the approver handed back."""
    got = ctx.approval("ship", {"to": "customer"})
    return {"decision": got.decision, "payload": got.payload}
