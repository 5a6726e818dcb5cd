"""Recipes of the stream tests (imported by worker subprocesses via PYTHONPATH)."""

from __future__ import annotations

import time
from typing import Any

from pgflight.recipes import StepContext, recipe


@recipe("stream_count")
def stream_count(ctx: StepContext) -> Any:
    """Write chunks chunk-0 .. chunk-(n-1) to channel 'count', one every `every_s` seconds."""
    out = ctx.stream("count")
    n = int(ctx.input.get("n", 1000))
    every = float(ctx.input.get("every_s", 0.002))
    for i in range(n):
        out.write(f"chunk-{i}")
        time.sleep(every)
    return {"n": n}


@recipe("stream_then_hang")
def stream_then_hang(ctx: StepContext) -> Any:
    """Write a<attempt>-0..4 to channel 'tokens'; the first attempt then hangs (a test kills it)."""
    out = ctx.stream("tokens")
    for i in range(5):
        out.write(f"a{ctx.attempt_no}-{i}")
    out.flush()
    if ctx.attempt_no == 1:
        time.sleep(120)
    return {"attempt_no": ctx.attempt_no}
