"""
The heartbeat: one thread, one connection, one call per beat renewing every lease the worker holds.

It runs outside the event loop and the recipe threads, so a CPU-bound recipe holding the GIL
for seconds still lets it run (the interpreter switches threads every 5 ms; C04 b). The interval
is at most lease/3: a larger one is clamped with a warning (C04 a).

Per attempt the server answers ``ok``, ``lost`` (reclaimed, timed out or finished elsewhere) or
``cancelled``. On ``lost`` the step's ``cancelled`` event is set and the attempt is abandoned: no
write follows, except the refusal itself on record (record_stale_write, C02). On ``cancelled``
the event is set and the cancel acknowledged at once with release_step, so the run need not wait
for a recipe that ignores cancellation.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pgflight import db, errors, models
from pgflight.db.connection import connect, is_transient

log = logging.getLogger("pgflight.heartbeat")

RUNNING, FINISHING, LOST, CANCELLED, RELEASED = "running", "finishing", "lost", "cancelled", "released"


class LazyEvent(threading.Event):
    """
    A :class:`threading.Event` whose condition variable is made on the first :meth:`wait` that has
    to block: most attempts' ``cancelled`` event is only ever read with :meth:`is_set` (or never),
    and a threading.Event's Condition cost 4-10 us to make, per step (2-4 % of a no-op
    step's worker CPU). Thread-safe as an Event: set, clear and the first blocking wait agree under
    one lock of its own.
    """

    def __init__(self) -> None:  # not Event.__init__: no Condition until a wait needs one
        self._flag = False
        self._mutex = threading.Lock()
        self._event: threading.Event | None = None

    def is_set(self) -> bool:
        """Whether the flag is set."""
        return self._flag

    def set(self) -> None:
        """Set the flag and wake every waiter."""
        with self._mutex:
            self._flag = True
            if self._event is not None:
                self._event.set()

    def clear(self) -> None:
        """Reset the flag."""
        with self._mutex:
            self._flag = False
            if self._event is not None:
                self._event.clear()

    def wait(self, timeout: float | None = None) -> bool:
        """
        Block until the flag is set, at most `timeout` seconds (None: no limit).

        :return: the flag at the end (False: timed out).
        """
        if self._flag:
            return True
        with self._mutex:
            if self._flag:
                return True
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        return event.wait(timeout)

    def _at_fork_reinit(self) -> None:
        self._mutex = threading.Lock()
        if self._event is not None:
            self._event._at_fork_reinit()  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {'set' if self._flag else 'unset'}>"


@dataclass
class Held:
    """One attempt this worker holds: the claim and what the worker may still do with it."""

    claim: models.ClaimedStep
    cancelled: threading.Event = field(default_factory=LazyEvent)
    state: str = RUNNING  # running | finishing (a final write is in flight) | lost | cancelled | released


class HeldSet:
    """The attempts a worker holds, shared by the event loop and the heartbeat thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[int, Held] = {}

    def add(self, claim: models.ClaimedStep) -> Held:
        """Hold a claimed attempt (only claims from this process's claim_batch, C10)."""
        h = Held(claim)
        with self._lock:
            self._held[claim.attempt_id] = h
        return h

    def remove(self, attempt_id: int) -> None:
        """Forget an attempt (finished, parked, abandoned)."""
        with self._lock:
            self._held.pop(attempt_id, None)

    def snapshot(self) -> list[Held]:
        """The attempts held now."""
        with self._lock:
            return list(self._held.values())

    def transition(self, held: Held, to: str, *, only_from: tuple[str, ...] = (RUNNING,)) -> bool:
        """
        Compare-and-set the state of `held`.

        :return: True when the state was one of `only_from` and is now `to`.
        """
        with self._lock:
            if held.state not in only_from:
                return False
            held.state = to
        if to in (LOST, CANCELLED, RELEASED):
            held.cancelled.set()
        return True

    def __len__(self) -> int:
        with self._lock:
            return len(self._held)


def clamp_interval(lease_s: float, heartbeat_s: float | None) -> float:
    """
    The heartbeat interval: `heartbeat_s`, at most lease/3 (clamped with a warning, C04).

    :param lease_s: lease length in seconds.
    :param heartbeat_s: wanted interval in seconds (None: lease/3).
    :raises ValueError: a lease or an interval that is not a positive number (a zero interval
        would beat in a busy loop).
    """
    if not lease_s > 0 or (heartbeat_s is not None and not heartbeat_s > 0):
        raise ValueError(f"lease ({lease_s!r} s) and heartbeat interval ({heartbeat_s!r} s) must be positive")
    limit = lease_s / 3
    if heartbeat_s is None:
        return limit
    if heartbeat_s > limit:
        log.warning(
            "heartbeat interval %.3gs is more than lease/3 (lease %.3gs): clamped to %.3gs so a slow beat "
            "cannot let the lease lapse",
            heartbeat_s,
            lease_s,
            limit,
        )
        return limit
    return heartbeat_s


class Heartbeat(threading.Thread):
    """The heartbeat thread of one worker."""

    def __init__(
        self,
        dsn: str,
        worker_id: int,
        held: HeldSet,
        *,
        interval_s: float,
        on_abandon: Callable[[Held], None] | None = None,
        name: str = "pgflight-heartbeat",
    ) -> None:
        super().__init__(name=name, daemon=True)
        self.dsn = dsn
        self.worker_id = worker_id
        self.held = held
        self.interval_s = interval_s
        self.on_abandon = on_abandon or (lambda h: None)
        self._stop_event = threading.Event()
        self._conn: db.Connection | None = None
        self.beats = 0
        self.max_lag_s = 0.0  # worst delay of a beat past its schedule, seconds
        self.lags: list[float] = []

    def stop(self) -> None:
        """Ask the thread to end after the current beat."""
        self._stop_event.set()

    def run(self) -> None:
        next_at = time.monotonic()
        backoff = 0.1
        while not self._stop_event.is_set():
            delay = next_at - time.monotonic()
            if delay > 0 and self._stop_event.wait(delay):
                break
            lag = max(0.0, time.monotonic() - next_at)
            self.max_lag_s = max(self.max_lag_s, lag)
            if len(self.lags) < 10000:
                self.lags.append(lag)
            try:
                self.beat()
                backoff = 0.1
                next_at += self.interval_s
                if next_at < time.monotonic():  # fell behind (outage): beat again soon, do not burst
                    next_at = time.monotonic() + self.interval_s
            except Exception as e:
                if not is_transient(e) and not isinstance(e, errors.PgflightError):
                    log.exception("heartbeat failed")
                else:
                    log.warning("heartbeat failed (%s); retrying in %.1fs", _first_line(e), backoff)
                self._close()
                next_at = time.monotonic() + backoff
                backoff = min(backoff * 2, max(0.2, self.interval_s / 2))
        self._close()

    def beat(self) -> None:
        """Renew every held lease once and act on lost and cancelled attempts."""
        # ascending attempt ids, the order complete_batch locks rows in too: no deadlock between them
        held = sorted(self.held.snapshot(), key=lambda h: h.claim.attempt_id)
        conn = self._connection()
        rows = db.heartbeat(
            conn, self.worker_id, [h.claim.attempt_id for h in held], [h.claim.fencing_token for h in held]
        )
        self.beats += 1
        by_id = {h.claim.attempt_id: h for h in held}
        for row in rows:
            h = by_id.get(row.attempt_id)
            if h is None or row.status == "held":
                continue
            if row.status == "cancelled" and self.held.transition(h, CANCELLED):
                log.info("attempt %s (step %s) cancelled: stopping it", h.claim.attempt_id, h.claim.step_id)
                self.on_abandon(h)
                self._acknowledge_cancel(conn, h)
            elif row.status == "lease_lost" and self.held.transition(h, LOST):
                log.warning(
                    "lease lost on attempt %s (step %s): abandoning it, writing nothing",
                    h.claim.attempt_id,
                    h.claim.step_id,
                )
                self.on_abandon(h)
                db.note_stale_write(conn, h.claim.attempt_id, h.claim.fencing_token, "heartbeat")

    def _acknowledge_cancel(self, conn: db.Connection, h: Held) -> None:
        try:
            db.release_step(conn, h.claim.attempt_id, h.claim.fencing_token, reason="cancel acknowledged")
        except errors.PgflightError as e:
            log.info("cancel of attempt %s not acknowledged: %s", h.claim.attempt_id, e)

    def _connection(self) -> db.Connection:
        if self._conn is None or self._conn.closed:
            self._conn = connect(self.dsn, application_name="pgflight-heartbeat")
        return self._conn

    def _close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
