"""
The client of pgflight's streams (docs/streams.md): chunks a running step writes to a named channel
of its run, and the reads that follow them. One Python function per SQL function.
"""

from __future__ import annotations

from collections.abc import Sequence

from pgflight import models
from pgflight.db.core import Connection, _fenced, _one, _rows

__all__ = ["stream_channels", "stream_read", "stream_write"]


def stream_write(
    conn: Connection, attempt_id: int, token: int, channel: str, chunks: Sequence[str]
) -> models.StreamWrite:
    """
    Append `chunks` (in order) to stream `channel` of the attempt's run, in one transaction.

    :return: first_seq and last_seq of the chunks written (first_seq None when `chunks` is empty),
        and the stream's total bytes.
    :raises LeaseLost: ZF001. :raises Cancelled: ZF002. :raises CapExceeded: ZF005 (more chunks than
        settings.max_stream_chunks_per_call, a chunk over max_stream_chunk_bytes, the stream over
        max_stream_bytes: nothing written). :raises BadArgument: 22023 (a blank channel).
    """
    return _fenced(
        conn,
        attempt_id,
        token,
        "stream_write",
        lambda: _one(
            conn,
            "select * from pgflight.stream_write(%s, %s, %s, %s::text[])",
            [attempt_id, token, channel, list(chunks)],
            models.StreamWrite,
        ),
    )


def stream_read(
    conn: Connection,
    run_id: int,
    channel: str,
    *,
    after_seq: int = 0,
    limit: int = 1000,
    wait_s: float = 0.0,
) -> list[models.StreamChunk]:
    """
    The chunks of stream `channel` of run `run_id` with seq > `after_seq`, in order.

    :param limit: at most this many (1..10,000).
    :param wait_s: when none is there yet, wait up to this many seconds (0..60) for the first.
    :return: the chunks, each with the attempt that wrote it (attempt_no, attempt_id); empty when
        nothing came within `wait_s`.
    :raises NotFound: ZF003, the run is unknown or of a workspace the login may not read.
    """
    return _rows(
        conn,
        "select * from pgflight.stream_read(%s, %s, %s, %s, %s)",
        [run_id, channel, after_seq, limit, float(wait_s)],
        models.StreamChunk,
    )


def stream_channels(conn: Connection, run_id: int) -> list[models.StreamChannel]:
    """
    The streams of run `run_id`: channel, last_seq, total_bytes, updated_at, by channel.

    :raises NotFound: ZF003, the run is unknown or of a workspace the login may not read.
    """
    return _rows(conn, "select * from pgflight.stream_channels(%s)", [run_id], models.StreamChannel)
