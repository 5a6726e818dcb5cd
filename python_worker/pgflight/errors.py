"""
pgflight's exceptions, one class per SQLSTATE the SQL API raises.

Every API function raises pgflight's own SQLSTATE class (``ZF…``) or ``22023``; the client
(:mod:`pgflight.db`) turns the driver error into the class below, keeping the server's message,
DETAIL and HINT. Branch on the class (or on ``sqlstate``), never on the message text.

=========  =========================  =====================================================
SQLSTATE   class                      meaning
=========  =========================  =====================================================
ZF001      :class:`LeaseLost`         the attempt was reclaimed / superseded: abandon it
ZF002      :class:`Cancelled`         the run or step was cancelled: stop, release_step
ZF003      :class:`NotFound`          unknown run, step, attempt or workspace
ZF004      :class:`IdempotencyConflict` same idempotency key, different input
ZF005      :class:`CapExceeded`       a size or count over its cap (settings.max_*)
ZF006      :class:`InvalidState`      the operation does not apply in the current state
ZF007      :class:`BudgetExceeded`    a spend or iteration cap was reached
ZF008      :class:`AlreadyDecided`    an approval gate already holds another decision
ZF009      :class:`FakeClockDisabled` pgflight.fake_now set while allow_fake_clock is off
ZF010      :class:`UnknownWorker`     unknown or stopped worker id, or another login's
ZF011      :class:`CronMissing`       pg_cron is not installed
ZF012      :class:`Forbidden`         outside the login's lane, workspaces or own attempts
ZF013      :class:`TokenRateLimited`  the workspace's model tokens per minute are used: wait
ZF014      :class:`WorkspaceMoving`   (a cells' proxy) the workspace is being moved: retry
22023      :class:`BadArgument`       a malformed or out-of-range argument
=========  =========================  =====================================================
"""

from __future__ import annotations

import re


class PgflightError(Exception):
    """
    Base of every error the SQL API raises on purpose.

    :ivar sqlstate: the five-character SQLSTATE (``ZF001`` …).
    :ivar detail: the server's DETAIL, or None.
    :ivar hint: the server's HINT (what to do about it), or None.
    """

    sqlstate: str = ""

    def __init__(
        self, message: str, *, sqlstate: str | None = None, detail: str | None = None, hint: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        if sqlstate is not None:
            self.sqlstate = sqlstate
        self.detail = detail
        self.hint = hint

    def one_line(self) -> str:
        """The message and, when there is one, the hint: what the CLI prints."""
        return f"{self.message} ({self.hint})" if self.hint else self.message


class LeaseLost(PgflightError):
    """ZF001: the write carried a superseded token or the attempt is no longer leased; write nothing more."""

    sqlstate = "ZF001"


class Cancelled(PgflightError):
    """ZF002: the run or step was cancelled; stop the work and acknowledge with release_step."""

    sqlstate = "ZF002"


class NotFound(PgflightError):
    """ZF003: unknown run, step, attempt or workspace."""

    sqlstate = "ZF003"


class IdempotencyConflict(PgflightError):
    """ZF004: the idempotency key names a run submitted with a different input."""

    sqlstate = "ZF004"


class CapExceeded(PgflightError):
    """
    ZF005: a size or count over its cap in ``pgflight.settings`` (``max_input_bytes``,
    ``max_result_bytes``, ``max_batch_size`` …); the DETAIL names the setting. Nothing was written.
    """

    sqlstate = "ZF005"


InputTooLarge = CapExceeded  # the name ZF005 had when it capped inputs only


class InvalidState(PgflightError):
    """ZF006: the operation does not apply to the step in its current state."""

    sqlstate = "ZF006"


class BudgetExceeded(PgflightError):
    """ZF007: a spend, iteration or tool-call cap was reached."""

    sqlstate = "ZF007"


class AlreadyDecided(PgflightError):
    """ZF008: the approval gate already holds a different decision."""

    sqlstate = "ZF008"


class FakeClockDisabled(PgflightError):
    """ZF009: ``pgflight.fake_now`` is set but ``settings.allow_fake_clock`` is off."""

    sqlstate = "ZF009"


class UnknownWorker(PgflightError):
    """ZF010: unknown or stopped worker id, or one registered by another login; register again."""

    sqlstate = "ZF010"


class CronMissing(PgflightError):
    """ZF011: pg_cron is not installed in this database."""

    sqlstate = "ZF011"


class Forbidden(PgflightError):
    """
    ZF012: the login has no grant for that workspace in this lane (``grant_workspace``), or the
    attempt is held by another login's worker. Nothing was written.
    """

    sqlstate = "ZF012"


class TokenRateLimited(PgflightError):
    """
    ZF013: the workspace used its model tokens per minute (``model_tokens_per_min``); nothing was
    reserved. Ask again after :attr:`retry_after_s` seconds (the agent loop waits, heartbeating).
    """

    sqlstate = "ZF013"

    @property
    def retry_after_s(self) -> float:
        """Seconds until the window has room, from the DETAIL's ``retry_after_s=N`` (1 when absent)."""
        match = re.search(r"retry_after_s=(\d+(?:\.\d+)?)", self.detail or "")
        return float(match.group(1)) if match else 1.0


class WorkspaceMoving(PgflightError):
    """
    ZF014: through a cells' proxy, the workspace is being copied to another cell (docs/scaling.md);
    nothing was done. Retry in a moment: the move freezes a workspace for about as long as its
    rows take to copy.
    """

    sqlstate = "ZF014"


class BadArgument(PgflightError):
    """22023: a malformed or out-of-range argument."""

    sqlstate = "22023"


BY_SQLSTATE: dict[str, type[PgflightError]] = {
    cls.sqlstate: cls
    for cls in (
        LeaseLost,
        Cancelled,
        NotFound,
        IdempotencyConflict,
        CapExceeded,
        InvalidState,
        BudgetExceeded,
        AlreadyDecided,
        FakeClockDisabled,
        UnknownWorker,
        CronMissing,
        Forbidden,
        TokenRateLimited,
        WorkspaceMoving,
        BadArgument,
    )
}


def from_sqlstate(
    sqlstate: str | None, message: str, *, detail: str | None = None, hint: str | None = None
) -> PgflightError | None:
    """
    Build the exception for a server error, or None when the SQLSTATE is not one of pgflight's.

    :param sqlstate: the error's SQLSTATE.
    :param message: the server's primary message.
    :return: an instance of the mapped class, or None.
    """
    cls = BY_SQLSTATE.get(sqlstate or "")
    if cls is None:
        return None
    return cls(message, sqlstate=sqlstate, detail=detail, hint=hint)
