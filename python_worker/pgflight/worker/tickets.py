"""Wake tickets: which ``pgflight_ready`` notification this process answers with a claim."""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Iterable

from pgflight.db.connection import Listener


class WakeTickets:
    """
    Which ``pgflight_ready`` notifications this process answers with a claim (without tickets
    every idle process made one empty claim per job).

    The engine's payload is the id of the transaction that made work ready, a *ticket*; a worker
    tries a session advisory lock on its LISTEN connection keyed by (its recipe set, the ticket),
    so of the idle processes serving the same recipes exactly one gets it and claims, and the
    others stay asleep. A process with other recipes has other keys, so every recipe group still
    gets one claimer (the engine does not say which recipe became ready). An empty payload (an
    engine before @v0.3.0's rework, or another sender) wakes every listener, as before.

    A won lock is held ``hold_s`` seconds, long enough for every listener to have tried it (a
    late one must not win a ticket already served), and at most ``max_held`` at once. Nothing is
    lost when the winner dies: its locks go with its session, and the other processes' poll (every
    ``poll_s``) claims what it did not.
    """

    def __init__(self, recipes: Iterable[str], *, hold_s: float = 2.0, max_held: int = 64) -> None:
        self.group = "\x1f".join(sorted(recipes))
        self.hold_s = hold_s
        self.max_held = max_held
        self.won = 0
        self.lost = 0
        self._held: deque[tuple[float, int]] = deque()

    def key(self, ticket: str) -> int:
        """The advisory lock key (signed 64 bits) of `ticket` for this recipe group."""
        # the derivation every library shares (docs/worker_protocol.md §3): mixed-language workers meet
        digest = hashlib.sha256(f"pgflight-wake\x1f{self.group}\x1f{ticket}".encode()).digest()
        return int.from_bytes(digest[:8], "big", signed=True)

    def answer(self, listener: Listener, payloads: list[str], free: int, now: float) -> bool:
        """
        Try the tickets of `payloads` (at most `free` of them): True when this process won one or
        a payload was empty (a plain wake-up).
        """
        if "" in payloads:
            return True
        keys = [self.key(p) for p in dict.fromkeys(payloads)][: max(1, free)]
        won = listener.try_tickets(keys)
        for k, w in zip(keys, won, strict=True):
            if w:
                self._held.append((now, k))
        self.won += sum(won)
        self.lost += len(won) - sum(won)
        return any(won)

    def hold(self, key: int, now: float) -> None:
        """A ticket this session won by other means (:func:`claim_with_ticket`)."""
        self._held.append((now, key))
        self.won += 1

    def expire(self, listener: Listener, now: float) -> None:
        """Release the tickets held longer than hold_s, and the oldest beyond max_held."""
        done: list[int] = []
        while self._held and (now - self._held[0][0] >= self.hold_s or len(self._held) > self.max_held):
            done.append(self._held.popleft()[1])
        if done:
            listener.release_tickets(done)

    def forget(self) -> None:
        """The LISTEN session ended (its locks with it)."""
        self._held.clear()
