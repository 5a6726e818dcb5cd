"""Recipes of the wait tests (imported by worker subprocesses via PYTHONPATH)."""

from __future__ import annotations

import os
from typing import Any

from pgflight.recipes import StepContext, recipe


def _count(path: str) -> int:
    """Append one line to `path` and return how many lines it has (a side effect a test can count)."""
    with open(path, "a") as f:
        f.write("x\n")
    with open(path) as f:
        return sum(1 for _ in f)


@recipe("sleep_twice")
def sleep_twice(ctx: StepContext) -> Any:
    """Sleep 3 s twice; the side effect before the sleeps is effect-wrapped, so it runs once."""
    ran = ctx.effect("before", lambda: _count(ctx.input["counter"]))
    ctx.sleep("first", ctx.input.get("seconds", 3))
    ctx.sleep("second", ctx.input.get("seconds", 3))
    return {"before": ran, "attempt_no": ctx.attempt_no}


@recipe("await_paid")
def await_paid(ctx: StepContext) -> Any:
    """Wait for order.paid:<order> and return its payload; the effect before the wait runs once."""
    ran = ctx.effect("before", lambda: _count(ctx.input["counter"]))
    payload = ctx.wait_event(
        "order.paid",
        str(ctx.input["order"]),
        timeout_s=ctx.input.get("timeout_s"),
        default=ctx.input.get("default"),
    )
    return {"payload": payload, "before": ran, "pid": os.getpid()}


@recipe("ship_on_approval")
def ship_on_approval(ctx: StepContext) -> Any:
    """Ask to ship; the approver's payload (where to ship) and reason are what the step returns."""
    got = ctx.approval("ship", {"to": ctx.input["to"]})
    return {"decision": got.decision, "note": got.note, "payload": got.payload}
