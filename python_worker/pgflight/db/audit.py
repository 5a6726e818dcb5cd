"""
The typed client of ``pgflight.run_audit``: a run's audit counted from the tables.

Imported as ``pgflight.db.audit`` (like :mod:`pgflight.db.agent`); the model lives here with its
one function.
"""

from __future__ import annotations

from decimal import Decimal

from pgflight.db.core import Connection, _one
from pgflight.models import Row

__all__ = ["RunAudit", "run_audit"]


class RunAudit(Row):
    """
    run_audit: what a run did, from the tables (never from a worker's memory).

    :ivar retries: attempts after a step's first. :ivar reclaimed_attempts: attempts that ended
        lease_expired (their worker died or stalled). :ivar stale_writes_rejected: refused late
        writes (stale_result_rejected events). :ivar dead_letters: steps whose latest attempt is
        dead_letter. :ivar tokens: input + output + cache tokens. :ivar usd: USD of the model calls.
    :ivar wall_time_s: seconds from submission to the end (to now while running).
    :ivar steps_unfinished: steps whose latest attempt is not terminal.
    :ivar steps_succeeded_twice: steps with more than one succeeded attempt (0 unless replayed).
    """

    run_id: int
    status: str
    steps: int
    attempts: int
    retries: int
    reclaimed_attempts: int
    stale_writes_rejected: int
    dead_letters: int
    model_calls: int
    input_tokens: int
    output_tokens: int
    tokens: int
    usd: Decimal
    wall_time_s: float
    steps_succeeded: int
    steps_unfinished: int
    steps_succeeded_twice: int


def run_audit(conn: Connection, run_id: int) -> RunAudit:
    """
    The audit of one run (steps, attempts, retries, reclaims, stale writes, dead letters, model
    calls, tokens, USD, wall time) in one snapshot.

    :raises NotFound: unknown run (ZF003).
    """
    return _one(conn, "select * from pgflight.run_audit(%s)", [run_id], RunAudit)
