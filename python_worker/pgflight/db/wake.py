"""
The worker's own statements beside the API functions: the claim that answers a wake ticket, the
wake-up a worker passes on, and JSON text sent as it is.

- :func:`claim_with_ticket`: a ticket's advisory lock and, when won, ``claim_batch`` in one
  statement on the LISTEN connection;
- :func:`notify_ready`: ``NOTIFY pgflight_ready`` with a ticket of the worker's own (a claim that
  came back full: more may be ready);
- :func:`json_text`: a result the worker encoded already (:func:`pgflight.db.payload.check_json`),
  for ``complete_batch`` and ``complete_and_claim`` to send without encoding it again.
"""

from __future__ import annotations

from collections.abc import Sequence

from psycopg.types.json import Jsonb

from pgflight import models
from pgflight.db.core import Connection, translated

__all__ = ["CLAIM_WITH_TICKET", "claim_with_ticket", "json_text", "notify_ready"]

CLAIM_WITH_TICKET = """
with t as materialized (
  select coalesce(pg_catalog.pg_try_advisory_lock(pgflight.wake_ticket_key(%s)), false) as won)
select t.won, case when t.won then (
         select coalesce(pg_catalog.jsonb_agg(pg_catalog.to_jsonb(c) operator(pg_catalog.||)
                                              pg_catalog.jsonb_build_object('input', c.input::text)), '[]')
           from pgflight.claim_batch(%s, %s, %s, %s, %s) c) end as claims
  from t
"""

_START = Jsonb({"start": True})


def claim_with_ticket(
    conn: Connection, key: int, worker_id: int, want: int, lease_s: float, recipes: Sequence[str]
) -> tuple[bool, list[models.ClaimedStep]]:
    """
    Try the ticket's session advisory lock (on ``pgflight.wake_ticket_key(key)``, a key only
    workers of this login's workspaces meet on) and, only when this session got it, claim_batch (start
    on claim) in the same statement: (won, claims). claim_batch is not called at all for a lost
    ticket (the claim is an init plan of the CASE branch, evaluated only when that branch is
    taken), so a loser costs one trivial statement.

    Each claim's input travels as a JSON string holding its JSON text, decoded row by row
    (:meth:`models.ClaimedStep.from_claim`): the aggregate itself is flat, so an input nested
    deeper than Python can decode fails that step alone, not the decoding of the whole batch.
    """
    with translated():
        row = conn.execute(
            CLAIM_WITH_TICKET, [key, worker_id, want, lease_s, list(recipes), _START]
        ).fetchone()
    assert row is not None
    return bool(row[0]), [models.ClaimedStep.from_claim(c) for c in row[1] or []]


def notify_ready(conn: Connection, ticket: str) -> None:
    """Wake one more idle worker of each recipe group (``pg_notify('pgflight_ready', ticket)``)."""
    conn.execute("select pg_catalog.pg_notify('pgflight_ready', %s)", [ticket])


def json_text(text: str) -> Jsonb:
    """JSON text made already, sent as it is by the batch completions (their jsonb[] literal)."""
    return Jsonb(text, dumps=str)
