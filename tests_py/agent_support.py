"""
Helpers for the agent tests: a local HTTP server that speaks the Anthropic Messages API (scripted
per test: tool_use, end_turn, an empty end_turn, max_tokens stops, usage fields, HTTP errors
429/500/529 with any Retry-After: seconds or an HTTP-date), and submitting agent runs. A request
with ``"stream": true`` gets the same message as server-sent events (message_start, per block
content_block_start, deltas of `chunk_chars` characters, content_block_stop, then message_delta
with the stop reason and output tokens, message_stop), `delta_delay_s` apart. The kill
right after an iteration is recorded lives in the worker process: agent_recipes.py.
"""

from __future__ import annotations

import email.utils
import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from pgflight.agent import providers as prov

# reply(request_body, call_no) -> (status, body) or (status, body, extra response headers)
Reply = Callable[[dict[str, Any], int], tuple[Any, ...]]


def message(
    content: list[dict[str, Any]],
    *,
    stop_reason: str | None = None,
    model: str = "claude-sonnet-4-6",
    input_tokens: int = 1000,
    output_tokens: int = 200,
    cache_creation: int = 0,
    cache_read: int = 0,
) -> dict[str, Any]:
    """A Messages API response body."""
    stop = stop_reason or ("tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn")
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": cache_creation,
            "cache_read_input_tokens": cache_read,
        },
    }


def agent_env(server_url: str, **more: str) -> dict[str, str]:
    """The environment of a worker whose agents talk to the local Messages API server."""
    return {
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": server_url,
        "PGFLIGHT_AGENT_BACKOFF_S": "0.01",
        **more,
    }


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks of a Messages API request, in order."""
    return [
        b
        for m in body["messages"]
        if m["role"] == "user"
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]


def tool_use(tid: str, name: str, args: dict[str, Any], text: str | None = None) -> list[dict[str, Any]]:
    """Content: optional text then one tool_use block."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    return [*blocks, {"type": "tool_use", "id": tid, "name": name, "input": args}]


def empty_end_turn(**usage: Any) -> dict[str, Any]:
    """An end_turn with no content at all (the Messages API documents it, e.g. after a tool result)."""
    return message([], stop_reason="end_turn", **usage)


def http_date(seconds_from_now: float) -> str:
    """An RFC 9110 HTTP-date (IMF-fixdate, GMT), as a Retry-After may carry."""
    return email.utils.formatdate(time.time() + seconds_from_now, usegmt=True)


def error_body(status: int) -> dict[str, Any]:
    kind = {429: "rate_limit_error", 529: "overloaded_error"}.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": f"fake {status}"}}


def sse_body(msg: dict[str, Any], chunk_chars: int) -> list[bytes]:
    """The server-sent events of message `msg` as the Messages API streams it, one item per event."""
    return [
        f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode()
        for kind, data in prov.message_events(msg, chunk_chars)
    ]


class FakeAnthropic:
    """
    A Messages API server on 127.0.0.1. `reply(request_body, call_no)` returns (status, body);
    every request is kept in `requests` (so tests count the model calls the server saw). A
    request with ``stream: true`` answered 200 with a message gets it as server-sent events
    (:func:`sse_body`); `events_sent` counts the events written before the client hung up.
    """

    def __init__(self, reply: Reply, *, chunk_chars: int = 4, delta_delay_s: float = 0.0) -> None:
        self.reply = reply
        self.chunk_chars = chunk_chars
        self.delta_delay_s = delta_delay_s
        self.events_sent = 0
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                with fake.lock:
                    fake.requests.append(body)
                    n = len(fake.requests)
                status, out, *more = fake.reply(body, n)
                headers: dict[str, str] = more[0] if more else {}
                if status in (429, 529) and "retry-after" not in headers:
                    headers = {**headers, "retry-after": "0"}
                if (
                    body.get("stream")
                    and status == 200
                    and isinstance(out, dict)
                    and out.get("type") == "message"
                ):
                    self._stream(out)
                    return
                data = out if isinstance(out, bytes) else json.dumps(out).encode()  # bytes: sent as they are
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, msg: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                try:
                    for event in sse_body(msg, fake.chunk_chars):
                        self.wfile.write(event)
                        self.wfile.flush()
                        with fake.lock:
                            fake.events_sent += 1
                        if fake.delta_delay_s:
                            time.sleep(fake.delta_delay_s)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading (a stream stopped at its reservation)
                self.close_connection = True

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_anthropic() -> Iterator[Callable[..., FakeAnthropic]]:
    """Factory: fake_anthropic(reply, **streaming options) -> FakeAnthropic; shut down after the test."""
    made: list[FakeAnthropic] = []

    def _make(reply: Reply, **kwargs: Any) -> FakeAnthropic:
        f = FakeAnthropic(reply, **kwargs)
        made.append(f)
        return f

    yield _make
    for f in made:
        f.close()
