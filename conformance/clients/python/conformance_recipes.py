"""The Python worker's conformance recipes: the standard set of conformance/README.md."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, StrictInt

from pgflight.recipes import StepContext, recipe


@recipe("noop")
def noop(ctx: StepContext) -> Any:
    return {"n": (ctx.input or {}).get("n")}


@recipe("sleep")
async def sleep(ctx: StepContext) -> Any:
    import asyncio

    seconds = float(ctx.input["seconds"])
    await asyncio.sleep(seconds)
    return {"slept": seconds}


@recipe("fail_always")
def fail_always(ctx: StepContext) -> Any:
    raise RuntimeError(f"boom on attempt {ctx.attempt_no}")


@recipe("fan_out")
def fan_out(ctx: StepContext) -> Any:
    n = int(ctx.input["n"])
    ctx.spawn([{"key": f"c{i:04d}", "recipe": "child", "input": {"i": i}} for i in range(n)])
    children = ctx.children()
    return {"children": len(children), "sum": sum(int(c.result["double"]) for c in children)}


@recipe("child")
def child(ctx: StepContext) -> Any:
    return {"double": int(ctx.input["i"]) * 2}


@recipe("effect")
def effect(ctx: StepContext) -> Any:
    counter = Path(ctx.input["counter"])

    def act() -> Any:
        with counter.open("a") as f:
            f.write(f"{ctx.attempt_id}\n")
        return {"calls": len(counter.read_text().split())}

    receipt = ctx.effect("count", act)
    if ctx.attempt_no == ctx.input.get("crash_on_attempt"):
        os.kill(os.getpid(), signal.SIGKILL)  # between the effect and the completion
        time.sleep(60)
    return {"receipt": receipt, "attempt": ctx.attempt_no}


class Typed(BaseModel):
    n: StrictInt


@recipe("typed", input=Typed)
def typed(ctx: StepContext) -> Any:
    return {"n": ctx.input.n}


@recipe("approval")
def approval(ctx: StepContext) -> Any:
    decision = ctx.request_approval(str(ctx.input["gate"]), {"asked_by": "conformance"})
    return {"decision": decision, "attempt": ctx.attempt_no}


@recipe("wait_event")
def wait_event(ctx: StepContext) -> Any:
    payload = ctx.wait_event(str(ctx.input["name"]), str(ctx.input["key"]))
    return {"payload": payload, "attempt": ctx.attempt_no}


@recipe("slow")
def slow(ctx: StepContext) -> Any:
    progress = ctx.stream("progress")
    progress.write(f"start {ctx.attempt_no}")
    progress.flush()
    time.sleep(float(ctx.input["seconds"]))  # heedless of a lost lease: its later writes must be refused
    progress.write(f"end {ctx.attempt_no}")
    progress.flush()
    receipt = ctx.effect("done", lambda: {"by_attempt": ctx.attempt_no})
    return {"receipt": receipt, "attempt": ctx.attempt_no}


@recipe("hang")
def hang(ctx: StepContext) -> Any:
    time.sleep(3600)  # a hung call: only the deadline ends this attempt
    return {"hung": False}


@recipe("invalid_result")
def invalid_result(ctx: StepContext) -> Any:
    return {"bad": "nul\u0000"}  # jsonb refuses U+0000
