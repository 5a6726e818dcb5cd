"""
StreamWriter without a database: the pieces written with write_joined under one key while a batch
is queued go as one chunk, a new key or a plain write starts another, and a batch already sent is
never changed (the next piece of the same key starts a chunk of the next batch).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pgflight.streams import StreamWriter


def test_joined_pieces_make_one_chunk_a_batch_per_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGFLIGHT_STREAM_FLUSH_MS", "60000")  # batches only where the test flushes
    sent: list[list[str]] = []
    writer = StreamWriter("c", lambda ch, chunks: sent.append(list(chunks)))
    head: dict[str, Any] = {"id": "a"}
    for piece in ('{"te', 'xt": ', '"hi"}'):
        writer.write_joined("a", head, "p", piece)
    writer.write_joined("b", {"id": "b"}, "p", "{")
    writer.write("plain")
    writer.write_joined("b", {"id": "b"}, "p", "}")
    writer.flush()
    writer.write_joined("b", {"id": "b"}, "p", "more")
    writer.close()
    assert sent == [
        [
            json.dumps({"id": "a", "p": '{"text": "hi"}'}),
            json.dumps({"id": "b", "p": "{"}),
            "plain",
            json.dumps({"id": "b", "p": "}"}),
        ],
        [json.dumps({"id": "b", "p": "more"})],
    ]
    assert head == {"id": "a"}  # the caller's object is not changed
