"""
The inspector's live view of a run's streams in Chromium: the run page shows the text written so
far and, while the run is running, follows the stream as server-sent events (the text grows to
the whole stream, then the view ends with the run); without JavaScript the page reloads every 2 s
instead; a finished run's page has neither. The events endpoint resumes after Last-Event-ID.
"""

from __future__ import annotations

import urllib.request
from typing import Any

import psycopg

from inspector_browser import Served, page, serve  # noqa: F401  (fixtures)
from pgflight import db
from worker_support import step_status, wait_for, workers  # noqa: F401

WHOLE = "".join(f"chunk-{i}" for i in range(150))


def _get(url: str, **headers: str) -> str:
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as r:
        return str(r.read().decode())


def test_the_run_page_follows_a_running_stream_live_and_falls_back_to_refresh(
    conn: psycopg.Connection[Any], dsn: str, serve: Any, page: Any, workers: Any
) -> None:
    db.create_workspace(conn, "w")
    run = db.submit_run(conn, "w", "stream_count", {"n": 150, "every_s": 0.03})
    workers(dsn, "--poll", "0.3", recipes="stream_recipes")
    wait_for(lambda: db.stream_channels(conn, run.run_id), 30, "the stream's first chunk")
    s: Served = serve(dsn)
    html = _get(f"{s.url}/runs/{run.run_id}")
    assert '<noscript><meta http-equiv="refresh" content="2"></noscript>' in html  # no JavaScript: reloads

    page.goto(f"{s.url}/runs/{run.run_id}")
    first = page.locator("pre#stream-1").text_content() or ""
    assert first and WHOLE.startswith(first) and first != WHOLE, "the page did not open mid-stream"
    page.wait_for_selector("pre#stream-1.ended", timeout=30_000)
    assert page.locator("pre#stream-1").text_content() == WHOLE
    wait_for(lambda: step_status(conn, run.step_id) == "succeeded", 15, "the step to succeed")

    ended = _get(f"{s.url}/runs/{run.run_id}")
    assert 'http-equiv="refresh"' not in ended and "stream.js" not in ended
    assert WHOLE in ended  # the whole text, server-rendered
    # the events endpoint: after Last-Event-ID 148, chunks 149 and 150, then the end
    events = _get(f"{s.url}/runs/{run.run_id}/stream?channel=count", **{"Last-Event-ID": "148"})
    assert events.split("\n\n")[:3] == [
        'id: 149\nevent: chunk\ndata: {"seq": 149, "attempt_no": 1, "chunk": "chunk-148"}',
        'id: 150\nevent: chunk\ndata: {"seq": 150, "attempt_no": 1, "chunk": "chunk-149"}',
        "event: end\ndata: {}",
    ]
