"""
Demo recipes for the quick start and the tests: ``pgflight worker --recipes pgflight_demo``.

- ``noop``: returns its input.
- ``sleep`` {seconds}: sleeps (checking for cancellation), returns {"slept": seconds}.
- ``spin`` {seconds}: a pure-Python CPU loop holding the GIL (heartbeat starvation, C04).
- ``square`` {x}: returns x * x.
- ``fanout`` {n, child_sleep_s}: spawns n ``square`` children, then returns the sum of their results.
- ``flaky`` {fail_times}: fails until attempt fail_times + 1.
- ``fatal``: always fails fatally (dead letter at once).
- ``gated`` {}: asks for approval and returns the decision.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, Field

from pgflight.recipes import Fatal, StepContext, recipe


class Sleep(BaseModel):
    """Input of `sleep`: how long to sleep, in seconds."""

    seconds: float = Field(ge=0)


class Square(BaseModel):
    """Input of `square`: the number, and seconds to sleep first."""

    x: float
    sleep_s: float = 0.0


class Fanout(BaseModel):
    """Input of `fanout`: how many `square` children, and seconds each sleeps."""

    n: int = Field(ge=0, le=1_000_000)
    child_sleep_s: float = 0.0


class Flaky(BaseModel):
    """Input of `flaky`: how many attempts fail before one succeeds."""

    fail_times: int = 1


@recipe("noop")
def noop(ctx: StepContext) -> Any:
    """Return the input unchanged."""
    return ctx.input


@recipe("sleep", input=Sleep)
def sleep(ctx: StepContext) -> dict[str, float]:
    """Sleep `seconds`, in short slices so a cancel or lost lease stops it early."""
    end = time.monotonic() + ctx.input.seconds
    while (left := end - time.monotonic()) > 0:
        if ctx.cancelled.wait(min(left, 0.1)):
            ctx.check_cancelled()
    return {"slept": ctx.input.seconds}


@recipe("spin", input=Sleep)
def spin(ctx: StepContext) -> dict[str, int]:
    """Burn CPU in pure Python for `seconds` (holds the GIL; never checks for cancellation)."""
    end = time.monotonic() + ctx.input.seconds
    n = 0
    while time.monotonic() < end:
        for _ in range(10_000):
            n += 1
    return {"loops": n}


@recipe("square", input=Square)
def square(ctx: StepContext) -> float:
    """Return x * x (after an optional sleep)."""
    if ctx.input.sleep_s:
        time.sleep(ctx.input.sleep_s)
    return float(ctx.input.x * ctx.input.x)


@recipe("fanout", input=Fanout)
def fanout(ctx: StepContext) -> dict[str, Any]:
    """Spawn n ``square`` children (parks), then, once woken, sum their results."""
    ctx.spawn(
        [
            {"key": f"{i:07d}", "recipe": "square", "input": {"x": i, "sleep_s": ctx.input.child_sleep_s}}
            for i in range(ctx.input.n)
        ]
    )
    kids = ctx.children()
    failed = [k.step_key for k in kids if k.status != "succeeded"]
    if failed:
        raise Fatal(f"{len(failed)} child(ren) did not succeed: {failed[:5]}")
    return {"children": len(kids), "sum": sum(k.result for k in kids)}


@recipe("flaky", input=Flaky)
def flaky(ctx: StepContext) -> dict[str, int]:
    """Fail with a retryable error until attempt fail_times + 1."""
    if ctx.attempt_no <= ctx.input.fail_times:
        raise RuntimeError(f"flaky failure on attempt {ctx.attempt_no}")
    return {"attempt": ctx.attempt_no}


@recipe("fatal")
def fatal(ctx: StepContext) -> None:
    """Always fail fatally."""
    raise Fatal("this recipe always fails")


@recipe("gated")
def gated(ctx: StepContext) -> dict[str, str]:
    """Ask for approval at gate 'approval' and return the decision."""
    return {"decision": ctx.request_approval("approval", {"what": "demo"})}
