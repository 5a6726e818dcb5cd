"""Recipes used only by the worker tests (imported by worker subprocesses via PYTHONPATH)."""

from __future__ import annotations

import json
import os
import urllib.request
from typing import Any

from pydantic import BaseModel

from pgflight.recipes import StepContext, recipe


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
