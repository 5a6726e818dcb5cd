"""What the worker's parts share: its limits, its exceptions, and how it names things in its logs."""

from __future__ import annotations

import logging
import re

from pgflight import models
from pgflight.recipes import Fatal

log = logging.getLogger("pgflight.worker")

FAR_DEADLINE_S = 7 * 86400.0
"""
A deadline_at further away than this (seconds) arms no timer in the worker. A step without
``max_runtime_s`` gets claim time + the engine's ``runtime_s`` limit (365 days), so every step
would have one timer (a sync recipe) or an ``asyncio.timeout`` (an async one) that never fires.
The server's deadline sweep still fails an attempt that runs past it (retryable, as the worker's
own check would), and the next heartbeat reports it lost: the worker abandons it then.
"""

UNSERVED_SKIP_S = 30.0
"""
Seconds a worker leaves a recipe out of its claims after it claimed a step of it that it cannot
run (its registry names the recipe but has no function for it) and released the step: without
the pause it claimed the released step again at once, thousands of releases a second.
"""

EXIT_RESTART = 75
"""Exit status of a worker process that restarts itself (EX_TEMPFAIL): too many abandoned threads."""

PREPARED_MODES = ("auto", "on", "off")
"""The values of Worker(prepared_statements=...), --prepared-statements, PGFLIGHT_PREPARED_STATEMENTS."""


class WorkerRestart(SystemExit):
    """
    Raised by :meth:`Worker.run` after a clean stop when the worker needs a fresh process (too many
    recipe threads abandoned past their deadline). A SystemExit with code :data:`EXIT_RESTART`, so
    ``pgflight worker`` exits 75 and its supervisor starts it again.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(EXIT_RESTART)
        self.reason = reason


class DeadlineExceeded(Exception):
    """The attempt ran past its deadline_at (max_runtime_s): the worker stopped waiting for it."""


class UndecodableInput(Fatal):
    """
    A claimed step's input this worker cannot decode (JSON nested deeper than Python's decoder
    can recurse): the step is failed without retry (dead letter), the process and the other
    steps of its batch carry on.
    """


def overran(claim: models.ClaimedStep) -> DeadlineExceeded:
    """The error an attempt ends with when its recipe ran past the deadline (max_runtime_s)."""
    return DeadlineExceeded(
        f"deadline exceeded: the attempt ran past max_runtime_s (deadline {claim.deadline_at}); "
        "the worker stopped waiting for the recipe"
    )


def step_name(claim: models.ClaimedStep) -> str:
    """A claimed step as the logs name it: recipe, attempt id and step id."""
    return f"recipe {claim.recipe!r} of attempt {claim.attempt_id} (step {claim.step_id})"


def redact(dsn: str) -> str:
    """`dsn` with its password replaced by ***, for logs."""
    return re.sub(r"(password=|:)[^@\s]+@", r"\1***@", dsn)


def with_detail(e: BaseException) -> str:
    """The first line of an error and the server's DETAIL when it has one (psycopg errors)."""
    detail = getattr(getattr(e, "diag", None), "message_detail", None)
    return f"{first_line(e)} ({detail})" if detail else first_line(e)


def first_line(e: BaseException) -> str:
    """The first line of an error's message, or its class name when it has none."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
