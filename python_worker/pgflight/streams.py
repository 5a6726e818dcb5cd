"""
A step's stream writer (docs/streams.md): ``ctx.stream(channel).write(...)`` in a recipe.

Writes are batched, so a token stream is not one commit per token: the chunks written meanwhile
go to the database in one ``stream_write`` call (one transaction) when

- :data:`FLUSH_MS` milliseconds (default 50, ``PGFLIGHT_STREAM_FLUSH_MS``) have passed since the
  first chunk of the batch was written (a flusher thread per channel sends it), or
- the batch holds :data:`FLUSH_BYTES` bytes (default 16 KiB, ``PGFLIGHT_STREAM_FLUSH_BYTES``) or
  the cap of chunks per call (the writing thread sends it at once), or
- the recipe calls :meth:`StreamWriter.flush`, or the step ends (the worker flushes every channel
  of the attempt after the recipe returns, fails or parks, before it completes the step).

So a chunk reaches a reader at most about FLUSH_MS plus one commit after it was written (plus the
reader's own poll, 20 ms in ``stream_read``'s wait). A failed flush (the lease lost, a cap) is
raised by the next ``write`` or ``flush`` in the recipe's own thread; the chunks of that batch are
not written. A batch sent again after a connection drop whose commit was in fact done is written
twice (the worker's retry of transient errors; rare, and visible as repeated text).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from pgflight.settings import env_number

FLUSH_MS = 50.0
FLUSH_BYTES = 16384
MAX_CHUNKS_PER_CALL = 1000  # settings.max_stream_chunks_per_call's default

Send = Callable[[str, list[str]], Any]


class _Joined:
    """A JSON object chunk still queued whose `field` grows by the pieces written to it (write_joined)."""

    __slots__ = ("base", "field", "key", "parts")

    def __init__(self, key: Any, base: dict[str, Any] | None, field: str, piece: str) -> None:
        self.key, self.base, self.field, self.parts = key, base, field, [piece]

    def text(self) -> str:
        if self.base is None:  # plain text: the pieces joined
            return "".join(self.parts)
        return json.dumps({**self.base, self.field: "".join(self.parts)}, default=str)


def flush_ms() -> float:
    """Milliseconds a written chunk may wait for its batch: ``PGFLIGHT_STREAM_FLUSH_MS`` (default 50)."""
    return env_number("PGFLIGHT_STREAM_FLUSH_MS", FLUSH_MS)


def flush_bytes() -> int:
    """Bytes that send a batch at once: ``PGFLIGHT_STREAM_FLUSH_BYTES`` (default 16,384)."""
    return int(env_number("PGFLIGHT_STREAM_FLUSH_BYTES", FLUSH_BYTES, positive=True))


class StreamWriter:
    """
    The writer of one channel of a step's run. Thread-safe; :meth:`write` never waits on the
    database unless its batch is full.
    """

    def __init__(self, channel: str, send: Send, *, max_chunks: int = MAX_CHUNKS_PER_CALL) -> None:
        self.channel = channel
        self._send = send
        self._max_chunks = max_chunks
        self._flush_s = flush_ms() / 1000.0
        self._flush_bytes = flush_bytes()
        self._lock = threading.Lock()  # the buffer
        self._sending = threading.Lock()  # one batch at a time, in order
        self._wake = threading.Condition(self._lock)
        self._buf: list[str | _Joined] = []
        self._bytes = 0
        self._first_at = 0.0
        self._error: BaseException | None = None
        self._closed = False
        self._thread: threading.Thread | None = None
        self.last_seq = 0  # the last seq the database gave this writer's chunks
        self.chunks_written = 0

    def write(self, *chunks: Any) -> None:
        """
        Queue chunks for the stream: a str as it is, anything else as its JSON text.

        :raises PgflightError: the last batch could not be written (LeaseLost, Cancelled,
            CapExceeded ...); that batch is lost.
        """
        self._raise_error()
        texts = [c if isinstance(c, str) else json.dumps(c, default=str) for c in chunks]
        if texts:
            self._queue(texts, sum(len(t.encode()) for t in texts))

    def write_joined(self, key: Any, base: dict[str, Any] | None, field: str, piece: str) -> None:
        """
        Queue the JSON object `base` with `field` = `piece` (`base` None: `piece` as plain text);
        but when the last chunk still queued came from this method with the same `key`, append
        `piece` to its `field` (to its text) instead. So a run of pieces of one thing (a model's
        text deltas, a tool call's arguments) costs one chunk a batch, and the pieces of one key
        joined in ``seq`` order are the whole text.

        :raises PgflightError: as :meth:`write`.
        """
        self._raise_error()
        with self._lock:
            last = self._buf[-1] if self._buf else None
            if isinstance(last, _Joined) and last.key == key and not self._closed:
                last.parts.append(piece)
                self._bytes += len(piece.encode())
                return
        joined = _Joined(key, base, field, piece)
        self._queue([joined], len(joined.text().encode()))

    def _queue(self, chunks: Sequence[str | _Joined], size: int) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError(f"stream {self.channel!r} is closed: the step has ended")
            if not self._buf:
                self._first_at = time.monotonic()
            self._buf.extend(chunks)
            self._bytes += size
            full = self._bytes >= self._flush_bytes or len(self._buf) >= self._max_chunks
            if not full:
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._flusher, name=f"pgflight-stream-{self.channel}", daemon=True
                    )
                    self._thread.start()
                self._wake.notify()
        if full:
            self.flush()

    def flush(self) -> None:
        """Send what is queued now. :raises PgflightError: as :meth:`write`."""
        self._send_batch()
        self._raise_error()

    def close(self) -> None:
        """Send what is queued and stop the flusher; errors are kept (:attr:`error`), not raised."""
        with self._lock:
            self._closed = True
            self._wake.notify()
        try:
            self._send_batch()
        except BaseException as e:
            self._error = self._error or e
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def error(self) -> BaseException | None:
        """The error of the last failed batch, if any."""
        return self._error

    def _raise_error(self) -> None:
        if self._error is not None:
            e, self._error = self._error, None
            raise e

    def _send_batch(self) -> None:
        with self._sending:
            with self._lock:
                batch, self._buf, self._bytes = self._buf, [], 0
            texts = [c if isinstance(c, str) else c.text() for c in batch]
            for i in range(0, len(texts), self._max_chunks):
                part = texts[i : i + self._max_chunks]
                res = self._send(self.channel, part)
                self.last_seq = int(getattr(res, "last_seq", self.last_seq) or self.last_seq)
                self.chunks_written += len(part)

    def _flusher(self) -> None:
        while True:
            with self._lock:
                while not self._buf and not self._closed:
                    self._wake.wait()
                if self._closed:
                    return
                due = self._first_at + self._flush_s - time.monotonic()
                if due > 0:
                    self._wake.wait(due)
                    continue
            try:
                self._send_batch()
            except BaseException as e:
                self._error = e
                with self._lock:
                    self._buf, self._bytes = [], 0
