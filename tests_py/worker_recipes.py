"""Recipes used only by the worker tests (imported by worker subprocesses via PYTHONPATH)."""

from __future__ import annotations

import json
import os
import urllib.request
from typing import Any

from pydantic import BaseModel

from pgflight.recipes import StepContext, recipe

if os.environ.get("WORKER_TEST_SKIP_RESULT_CHECK"):
    # A worker whose own check misses a bad result: the server's refusal of the batch must still
    # harm only the bad row (the worker completes the batch row by row).
    import pgflight.worker.executor

    # its text is json.dumps' own, NaN included (the check would have refused it)
    pgflight.worker.executor.check_json = lambda value, **kw: json.dumps(value)  # type: ignore[assignment]


class Charge(BaseModel):
    url: str
    crash_on_attempt: int = 1


@recipe("charge", input=Charge)
def charge(ctx: StepContext) -> Any:
    """Call an external HTTP service once per step (effect receipt), crashing right after on attempt 1."""

    def call() -> Any:
        with urllib.request.urlopen(
            urllib.request.Request(ctx.input.url, method="POST", data=b"{}"), timeout=5
        ) as r:
            return json.loads(r.read())

    receipt = ctx.effect("charge", call)
    if ctx.attempt_no == ctx.input.crash_on_attempt:
        os._exit(137)  # the crash between the external effect and the step's completion
    return {"receipt": receipt, "attempt": ctx.attempt_no}


class FinishAt(BaseModel):
    at: float  # epoch seconds: every step of a test finishes at the same instant (one complete_batch)
    score: str  # "nan" makes a result jsonb refuses (an input could not carry a NaN)


@recipe("finish_at", input=FinishAt)
async def finish_at(ctx: StepContext) -> Any:
    """Wait until `at`, then return {"score": score} (a NaN score makes a result jsonb refuses)."""
    import asyncio
    import time

    await asyncio.sleep(max(0.0, ctx.input.at - time.time()))
    return {"score": float(ctx.input.score)}


class BadReceipt(BaseModel):
    url: str


@recipe("bad_receipt", input=BadReceipt)
def bad_receipt(ctx: StepContext) -> Any:
    """Call an external service once; its receipt holds an Infinity, which cannot be stored."""

    def call() -> Any:
        with urllib.request.urlopen(
            urllib.request.Request(ctx.input.url, method="POST", data=b"{}"), timeout=5
        ) as r:
            return {"reply": json.loads(r.read()), "rate": float("inf")}

    return ctx.effect("charge", call)


class Block(BaseModel):
    forever: bool = True


@recipe("block_sync", input=Block)
def block_sync(ctx: StepContext) -> Any:
    """Block forever, ignoring cancellation (a hung synchronous call)."""
    import threading

    threading.Event().wait()
    return None


@recipe("block_async", input=Block)
async def block_async(ctx: StepContext) -> Any:
    """Await forever (a hung asynchronous call)."""
    import asyncio

    await asyncio.Event().wait()
    return None


@recipe("quick")
def quick(ctx: StepContext) -> Any:
    """Return at once."""
    return {"ok": True}
