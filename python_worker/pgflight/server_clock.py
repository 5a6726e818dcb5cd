"""
The database's clock as seen from a worker process.

Every instant the engine hands a worker (an attempt's ``deadline_at``, ``lease_expires_at``) is
read on the database's clock (``pgflight._now()``). A host whose wall clock is off by minutes
must not time those instants with its own ``datetime.now``: ten minutes ahead, every step with a
``max_runtime_s`` under ten minutes would look past its deadline at once. :class:`ServerClock`
measures the offset between the database's clock and this host's monotonic clock over one round
trip (the midpoint of the round trip is taken as the instant the database read its clock), and
answers "now on the database's clock" from the monotonic clock and that offset: the host's wall
clock is never read. The offset is measured when the worker registers and again every
``resync_s`` seconds; the error is at most half a round trip.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

RESYNC_S = 60.0
"""Seconds after which a measured offset is measured again (monotonic clocks drift by ppm)."""


class ServerClock:
    """
    "Now" on the database's clock, from this host's monotonic clock and a measured offset.

    :param monotonic: the host's monotonic clock (seconds); tests may pass another.
    :param resync_s: seconds after which :meth:`due` says the offset should be measured again.
    """

    def __init__(
        self, *, monotonic: Callable[[], float] = time.monotonic, resync_s: float = RESYNC_S
    ) -> None:
        self._monotonic = monotonic
        self.resync_s = resync_s
        self._offset: float | None = None  # database epoch seconds - host monotonic seconds
        self._synced_at = float("-inf")
        self.round_trip_s: float | None = None

    @property
    def synced(self) -> bool:
        """True once an offset was measured."""
        return self._offset is not None

    def due(self) -> bool:
        """True when no offset was measured yet or the last one is older than ``resync_s``."""
        return self._monotonic() - self._synced_at >= self.resync_s

    def sync(self, read_server_now: Callable[[], datetime]) -> None:
        """
        Measure the offset: `read_server_now` makes one round trip and returns the database's
        clock (timezone-aware). A measurement with a round trip more than twice as long as the
        last one kept is kept only when the last one is due (a slow round trip is a worse guess).
        """
        before = self._monotonic()
        server = read_server_now()
        after = self._monotonic()
        rtt = after - before
        if self.round_trip_s is not None and rtt > 2 * self.round_trip_s and not self.due():
            return
        self._offset = server.timestamp() - (before + after) / 2
        self._synced_at = after
        self.round_trip_s = rtt

    def now(self) -> datetime:
        """
        Now on the database's clock (UTC).

        :raises RuntimeError: no offset measured yet (:meth:`sync` first).
        """
        if self._offset is None:
            raise RuntimeError("the database's clock was not read yet")
        return datetime.fromtimestamp(self._monotonic() + self._offset, UTC)

    def seconds_until(self, instant: datetime) -> float:
        """Seconds from now on the database's clock until `instant` (negative: it is past)."""
        if self._offset is None:
            raise RuntimeError("the database's clock was not read yet")
        return instant.timestamp() - (self._monotonic() + self._offset)
