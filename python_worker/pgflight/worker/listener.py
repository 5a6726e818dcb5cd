"""
The listener thread: LISTEN ``pgflight_ready`` on a direct connection and answer wake tickets.

Self-probed at startup (C32: on failure one actionable error, then fast polling), re-established
when it drops, LISTEN first and then a catch-up claim (C33), each reconnect logged. A
notification's payload is a wake ticket (:class:`~pgflight.worker.tickets.WakeTickets`): of the
idle processes with the same recipes, the one that takes the ticket's advisory lock first
claims, in the same statement on the LISTEN connection (:meth:`Producer.claim_ticket`), and the
others stay asleep and put their poll off; a winner whose claim fills its batch passes a fresh
ticket on, so a burst still reaches every idle process.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from pgflight import errors
from pgflight.db.connection import Listener, is_transient
from pgflight.worker.common import first_line, log, redact
from pgflight.worker.producer import Producer


class ListenLoop:
    """
    The listener thread's body (:meth:`run`). `probed` gets the LISTEN self-probe's verdict
    (direct or not) once, `wake` wakes the claim loop, `worker_id` reads the registration.
    """

    def __init__(
        self,
        *,
        listen_dsn: str,
        fallback_poll_s: float,
        producer: Producer,
        stopping: threading.Event,
        probed: Callable[[bool, Listener], None],
        wake: Callable[[], None],
        worker_id: Callable[[], int | None],
    ) -> None:
        self.listen_dsn = listen_dsn
        self.fallback_poll_s = fallback_poll_s
        self.producer = producer
        self.listening = False
        self.reconnects = 0
        self._stopping = stopping
        self._probed = probed
        self._wake = wake
        self._worker_id = worker_id
        self._claim_on_listener = True  # False once the LISTEN login cannot claim
        self._refusals = 0
        self._catch_ups = 0

    def run(self) -> None:
        listener = Listener(self.listen_dsn)
        tickets = self.producer.tickets
        first, backoff = True, 0.1
        while not self._stopping.is_set():
            try:
                listener.open()  # LISTEN first, then the catch-up claim below (C33)
                if first:
                    direct = listener.probe(2.0)
                    self._probed(direct, listener)
                    if not direct:
                        log.error(
                            "LISTEN does not work on %s: a self-NOTIFY did not arrive within 2 s (a "
                            "transaction pooler such as PgBouncer, or a hot standby?). Polling every %.3gs "
                            "instead. Fix: point --listen-dsn (PGFLIGHT_LISTEN_DSN) at a direct connection "
                            "to the primary.",
                            redact(self.listen_dsn),
                            self.fallback_poll_s,
                        )
                        listener.close()
                        self.listening = False
                        self._wake()
                        return
                    first = False
                    log.info("listening on pgflight_ready (backend %s)", listener.backend_pid())
                else:
                    self.reconnects += 1
                    log.warning(
                        "listener reconnected (backend %s), reconnect #%d; catching up",
                        listener.backend_pid(),
                        self.reconnects,
                    )
                self.listening = True
                backoff = 0.1
                self._catch_up(listener)
                while not self._stopping.is_set():
                    payloads = listener.wait(1.0)
                    if payloads and self._answer(listener, payloads):
                        self._wake()
                    tickets.expire(listener, time.monotonic())
            except Exception as e:
                self.listening = False
                tickets.forget()  # the session ended: the server released its locks
                if not is_transient(e):
                    log.exception("listener failed")
                else:
                    log.warning(
                        "listener connection lost (%s); reconnecting in %.1fs", first_line(e), backoff
                    )
                listener.close()
                self._wake()
                self._stopping.wait(backoff)
                backoff = min(backoff * 2, 2.0)
        listener.close()

    def _answer(self, listener: Listener, payloads: list[str]) -> bool:
        """
        Answer notifications: claim for a ticket won here, in the same statement that tries it
        (one round trip, as the claim alone was); True when the loop should claim instead (a plain
        wake-up, several tickets at once, or the listener cannot claim).
        """
        producer = self.producer
        free = producer.free()
        if free <= 0 or self._stopping.is_set():
            return False  # busy: leave the tickets to idle processes; a freed slot claims on its own
        now = time.monotonic()
        if len(payloads) == 1 and payloads[0] and self._claim_on_listener and self._worker_id() is not None:
            assert listener.conn is not None
            try:
                producer.claim_ticket(listener.conn, payloads[0], now)
                self._refusals = 0
                return False
            except errors.PgflightError as e:  # an unknown worker and the like: the loop deals with it
                self._refusals += 1
                if self._refusals >= 3:  # e.g. the LISTEN DSN logs in as another role
                    self._claim_on_listener = False
                    log.warning(
                        "claims on the LISTEN connection refused three times (%s): the claim loop "
                        "claims after each won ticket instead (one round trip more)",
                        first_line(e),
                    )
                return True
            except Exception as e:
                if is_transient(e):
                    raise
                self._claim_on_listener = False
                log.warning(
                    "cannot claim on the LISTEN connection (%s): wake-ups take one more round trip",
                    first_line(e),
                )
        if producer.tickets.answer(listener, payloads, free, now):
            producer.relay = True
            return True
        producer.ticket_lost_at = now  # someone else claims: the poll can wait
        return False

    def _catch_up(self, listener: Listener) -> None:
        """
        The catch-up claim after LISTEN (C33), on the LISTEN connection itself under a ticket of its
        own: its backend compiles claim_batch's plans now, not on the first NOTIFY (a cold first
        claim there cost up to about 100 ms at load 15, the p99 of a 100-job run).
        """
        if not self._claim_on_listener or self._worker_id() is None:
            self._wake()
            return
        assert listener.conn is not None
        self._catch_ups += 1
        try:
            self.producer.claim_ticket(
                listener.conn, f"catch-up.{os.getpid()}.{self._catch_ups}", time.monotonic()
            )
        except Exception as e:
            if is_transient(e):
                raise
            log.info("catch-up claim on the listener refused (%s): the claim loop does it", first_line(e))
            self._wake()
