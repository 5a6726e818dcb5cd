"""
Model providers: each turns one Messages API request into one Messages-API-shaped response (a
dict with ``content``, ``stop_reason``, ``usage``, ``model``).

- ``anthropic``: the real API through the ``anthropic`` SDK (``ANTHROPIC_API_KEY``; the base URL
  from ``ANTHROPIC_BASE_URL`` or the ``base_url`` argument). The SDK's own retries are off: pgflight
  retries transient errors itself so each one is on the record.
- ``openai``: OpenAI's Chat Completions API with tools through the ``openai`` SDK
  (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``), translated to and from the Messages API shape.
- ``offline``: pgflight's own deterministic model. It speaks the same tool-use protocol and
  delegates each decision to a *policy*, chosen by the tools offered (see :func:`register_policy`).
  Asked to stream, it sends the same answer in deltas, paced (:func:`offline_delta_ms`).
  The default policy calls each offered tool once, in order, one call per turn, then ends the turn
  with a summary. Same transcript in, same response out (tool_use ids included), so a resumed run
  is indistinguishable from an uninterrupted one.
- ``scripted``: returns the responses (or raises the errors) it was given, in order; for tests.

Streaming (docs/streams.md): a provider with a ``stream(request, on_delta)`` method answers the
same request through the Messages API's server-sent events (``stream: true``), calling
``on_delta`` with each text, thinking or tool-input delta as it arrives (and the running output
token count), and returns the same message ``create`` would: the blocks folded from the events as
the server sent them. ``on_delta`` may raise :class:`StopStream` to end the response there: the
stream is closed and :class:`StreamCut` carries what arrived (the complete blocks, the text so far,
the usage with the output tokens counted so far).

A third provider: a class with a ``name`` and ``create(request: Request) -> Response`` (the
:class:`Provider` protocol), registered with :func:`register_provider`; ``create`` returns a
Messages-API-shaped dict (``type`` message, ``content`` blocks — text, tool_use with id, name and
input —, ``stop_reason`` end_turn / tool_use / max_tokens / pause_turn, ``usage`` with
input_tokens, output_tokens, cache_creation_input_tokens, cache_read_input_tokens, and
``model``, priced by ``pgflight.model_prices``), raises :class:`TransientError` (with the status
and Retry-After) for what asking again may fix and :class:`RequestRefused` for what it cannot,
and makes no retries of its own. The recorder stores what ``create`` returns, so a resumed agent
rebuilds the same conversation from it (docs/agents.md).

Transient errors (HTTP 408, 409, 429, 5xx, 529 overloaded, connection errors, and a 200 whose body
is not JSON or not a message) are retried with backoff by :func:`create_with_retries` inside one
iteration; each is reported to ``on_error`` (the loop stores it as an ``api_error`` trace block).
Any other 4xx (400 invalid request, 401, 403, 404, 413 …) cannot succeed by asking again: it is
reported the same way and raised as :class:`~pgflight.recipes.Fatal`, so the step fails without a
retry.

Rate limits (429 rate_limit_error, 529 overloaded_error) are waited out, not failed: the wait is
the answer's ``retry-after-ms`` / ``Retry-After`` (seconds or an HTTP-date, RFC 9110 §10.2.3), else
the backoff, and never more than ``PGFLIGHT_AGENT_MAX_RETRY_AFTER_S`` seconds (default 60) per
wait; they do not count toward ``max_tries``. Past the caller's wait budget :class:`RateLimited`
is raised, and the agent gives its step back without spending an attempt.
"""

from __future__ import annotations

import contextlib
import email.utils
import hashlib
import json
import math
import os
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from pgflight.recipes import Fatal
from pgflight.settings import env_number

Response = dict[str, Any]


@dataclass
class Request:
    """One Messages API request."""

    model: str
    system: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    max_tokens: int = 1024


DEFAULT_MAX_RETRY_AFTER_S = 60.0
RATE_LIMIT_STATUSES = frozenset({429, 529})
# statuses below 500 worth asking again: request timeout, conflict, rate limit (as the SDKs retry)
RETRYABLE_4XX = frozenset({408, 409, 429})


class TransientError(Exception):
    """
    A model call failed in a way worth retrying (429, 5xx, 529, connection).

    :ivar retry_after_s: the server's wait in seconds (already parsed), or None.
    :ivar retry_after: the raw header, for the record.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after_s: float | None = None,
        retry_after: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after_s = retry_after_s
        self.retry_after = retry_after

    @property
    def rate_limited(self) -> bool:
        """429 (rate limit) or 529 (overloaded): wait, never fail the step for it."""
        return self.status in RATE_LIMIT_STATUSES


class RequestRefused(Exception):
    """The API refused the request in a way asking again cannot change (a 4xx other than 408/409/429)."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


def check_message(out: Any) -> Response:
    """
    `out` if it is a Messages API message (``type`` message, ``content`` a list, ``usage`` an
    object). :raises TransientError: anything else (a proxy's page, an empty or foreign body): the
    call is asked again like a 5xx, never recorded as an empty answer.
    """
    if (
        isinstance(out, dict)
        and out.get("type") == "message"
        and isinstance(out.get("content"), list)
        and isinstance(out.get("usage"), dict)
    ):
        return out
    shown = json.dumps(out, default=str)[:200] if not isinstance(out, str) else out[:200]
    raise TransientError(f"HTTP 200 with a body that is not a message: {shown}", status=200)


@dataclass
class Delta:
    """
    One delta of a streamed response, handed to ``on_delta`` before it is taken into the message.

    :ivar kind: text | thinking | input_json (a tool call's arguments, as JSON text in pieces).
    :ivar text: the delta.
    :ivar usage: the usage so far: ``message_start``'s (input and cache tokens) with output_tokens
        the running estimate, the characters of every delta so far (this one included) / 4,
        rounded up, or the server's own count once a ``message_delta`` gave one (if larger).
    :ivar index: the content block the delta belongs to (its index in the message).
    :ivar tool_id: for an input_json delta, the ``id`` of its tool_use block (else None).
    :ivar tool_name: for an input_json delta, the ``name`` of its tool_use block (else None).
    """

    kind: str
    text: str
    usage: dict[str, Any]
    index: int = 0
    tool_id: str | None = None
    tool_name: str | None = None


OnDelta = Callable[[Delta], None]


class StopStream(Exception):
    """Raised by an ``on_delta`` callback: end the response before this delta."""


class StreamCut(Exception):
    """
    A streamed response ended early by its ``on_delta`` (:class:`StopStream`).

    :ivar response: what arrived, as a message: the blocks complete so far, a text or thinking
        block cut where the stream stopped (a tool call whose arguments were still arriving is
        left out: it cannot be run), ``stop_reason`` None, the usage with output_tokens counted so
        far (the estimate of :class:`Delta`).
    :ivar retries: transient errors retried before this try (set by :func:`create_with_retries`).
    """

    def __init__(self, response: Response, why: str) -> None:
        super().__init__(why)
        self.response = response
        self.retries = 0


def sse_events(lines: Iterable[str]) -> Iterator[tuple[str, Any]]:
    """(event, data as JSON) of each server-sent event of `lines` (the text lines of the body)."""
    event, data = "", list[str]()
    for line in lines:
        if line == "":
            if data:
                raw = "\n".join(data)
                try:
                    yield event or "message", json.loads(raw)
                except ValueError as e:
                    raise TransientError(f"a stream event that is not JSON: {raw[:200]}", status=200) from e
            event, data = "", list[str]()
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
    if data:
        yield event or "message", json.loads("\n".join(data))


_DELTA_FIELDS = {"text_delta": ("text", "text"), "thinking_delta": ("thinking", "thinking")}


def fold_stream(events: Iterable[tuple[str, Any]], on_delta: OnDelta) -> Response:
    """
    The message the events of a streamed response make (Messages API streaming: message_start,
    content_block_start / _delta / _stop, message_delta, message_stop; ping ignored), each text,
    thinking and tool-input delta passed to `on_delta` first.

    :raises StreamCut: `on_delta` raised :class:`StopStream`.
    :raises TransientError: an ``error`` event, or the events ended before ``message_stop``.
    """
    msg: dict[str, Any] | None = None
    json_parts: dict[int, list[str]] = {}
    open_blocks: set[int] = set()
    chars = 0
    for event, data in events:
        kind = data.get("type", event) if isinstance(data, dict) else event
        if kind == "error":
            err = data.get("error") or {}
            status = 529 if err.get("type") == "overloaded_error" else 500
            why = f"{err.get('type')}: {err.get('message')}"
            raise TransientError(f"stream error event: {why}", status=status)
        if kind == "message_start":
            msg = dict(data["message"])
            msg["content"] = list(msg.get("content") or [])
            msg["usage"] = dict(msg.get("usage") or {})
            continue
        if msg is None:
            continue  # ping before the message
        if kind == "content_block_start":
            i = int(data["index"])
            while len(msg["content"]) <= i:
                msg["content"].append(None)
            msg["content"][i] = dict(data["content_block"])
            open_blocks.add(i)
        elif kind == "content_block_delta":
            i, d = int(data["index"]), data["delta"]
            block = msg["content"][i]
            if d.get("type") in _DELTA_FIELDS:
                name, field = _DELTA_FIELDS[d["type"]]
                text = d.get(field) or ""
            elif d.get("type") == "input_json_delta":
                name, field, text = "input_json", "", d.get("partial_json") or ""
            else:  # signature_delta, citations_delta, ...: taken as they come, no text
                if d.get("type") == "signature_delta":
                    block["signature"] = block.get("signature", "") + (d.get("signature") or "")
                elif d.get("type") == "citations_delta":
                    block.setdefault("citations", []).append(d.get("citation"))
                continue
            chars += len(text)
            counted = int(msg["usage"].get("output_tokens") or 0)
            usage = {**msg["usage"], "output_tokens": max(-(-chars // 4), counted)}
            tool = block if name == "input_json" else {}
            try:
                on_delta(Delta(name, text, usage, i, tool.get("id"), tool.get("name")))
            except StopStream as e:
                chars -= len(text)
                cut = {**msg, "stop_reason": None}
                cut["usage"] = {**msg["usage"], "output_tokens": max(-(-chars // 4), 0)}
                cut["content"] = [
                    b
                    for j, b in enumerate(msg["content"])
                    if b is not None and (j not in open_blocks or b.get("type") in ("text", "thinking"))
                ]
                raise StreamCut(cut, str(e) or "stopped by on_delta") from None
            if name == "input_json":
                json_parts.setdefault(i, []).append(text)
            else:
                block[field] = block.get(field, "") + text
        elif kind == "content_block_stop":
            i = int(data["index"])
            open_blocks.discard(i)
            if i in json_parts:
                joined = "".join(json_parts.pop(i))
                msg["content"][i]["input"] = json.loads(joined) if joined.strip() else {}
        elif kind == "message_delta":
            msg.update({k: v for k, v in (data.get("delta") or {}).items()})
            msg["usage"].update(data.get("usage") or {})
        elif kind == "message_stop":
            msg["content"] = [b for b in msg["content"] if b is not None]
            return check_message(msg)
    raise TransientError("the stream ended before message_stop", status=200 if msg is not None else None)


def message_events(msg: Response, chunk_chars: int) -> list[tuple[str, dict[str, Any]]]:
    """
    The events the Messages API streams message `msg` as (the input of :func:`fold_stream`, which
    folds them back into `msg`): message_start (no content, output_tokens 1), ping, per block
    content_block_start, its text or its tool input's JSON in deltas of `chunk_chars` characters,
    content_block_stop; then message_delta (stop reason, the output tokens) and message_stop.
    """

    def ev(kind: str, data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return kind, {"type": kind, **data}

    usage = dict(msg["usage"])
    start = {**msg, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    out = [ev("message_start", {"message": start}), ev("ping", {})]
    for i, block in enumerate(msg["content"]):
        if block["type"] == "text":
            out.append(ev("content_block_start", {"index": i, "content_block": {**block, "text": ""}}))
            text = block["text"]
            for k in range(0, len(text), chunk_chars):
                delta = {"type": "text_delta", "text": text[k : k + chunk_chars]}
                out.append(ev("content_block_delta", {"index": i, "delta": delta}))
        elif block["type"] == "tool_use":
            out.append(ev("content_block_start", {"index": i, "content_block": {**block, "input": {}}}))
            raw = json.dumps(block["input"])
            for k in range(0, len(raw), chunk_chars):
                delta = {"type": "input_json_delta", "partial_json": raw[k : k + chunk_chars]}
                out.append(ev("content_block_delta", {"index": i, "delta": delta}))
        else:
            out.append(ev("content_block_start", {"index": i, "content_block": block}))
        out.append(ev("content_block_stop", {"index": i}))
    delta = {"stop_reason": msg["stop_reason"], "stop_sequence": msg.get("stop_sequence")}
    out.append(ev("message_delta", {"delta": delta, "usage": {"output_tokens": usage["output_tokens"]}}))
    out.append(ev("message_stop", {}))
    return out


class RateLimited(Exception):
    """
    Still rate-limited when the caller's wait budget ran out: give the step back, try later.

    :ivar retry_after_s: the wait the last answer asked for (its Retry-After, at most
        ``PGFLIGHT_AGENT_MAX_RETRY_AFTER_S``; the backoff when it gave none): the earliest time the
        step may ask again, in seconds from now.
    """

    def __init__(self, message: str, *, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """
    Seconds to wait from a ``Retry-After`` header (RFC 9110 §10.2.3): delay-seconds or an
    HTTP-date (a date in the past is 0).

    :return: seconds (>= 0, finite), or None when absent or malformed (then the caller's backoff applies).
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # RFC 9110: an HTTP-date is GMT
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def max_retry_after_s() -> float:
    """The most seconds one rate-limit wait may last: ``PGFLIGHT_AGENT_MAX_RETRY_AFTER_S`` (default 60)."""
    return env_number("PGFLIGHT_AGENT_MAX_RETRY_AFTER_S", DEFAULT_MAX_RETRY_AFTER_S)


class Provider(Protocol):
    """Anything that answers a :class:`Request` with a Messages-API-shaped response."""

    name: str

    def create(self, request: Request) -> Response:
        """One model call. :raises TransientError: retry it."""
        ...


# --- anthropic -------------------------------------------------------------------------------


class AnthropicProvider:
    """The Anthropic Messages API through the official SDK."""

    name = "anthropic"

    def __init__(
        self, *, api_key: str | None = None, base_url: str | None = None, timeout_s: float = 600.0
    ) -> None:
        import anthropic

        self._anthropic = anthropic
        self.client = anthropic.Anthropic(
            api_key=api_key or os.environ.get("ANTHROPIC_API_KEY"),
            base_url=base_url or os.environ.get("ANTHROPIC_BASE_URL"),
            max_retries=0,
            timeout=timeout_s,
        )

    def create(self, request: Request) -> Response:
        """
        One call of messages.create.

        :raises TransientError: 408, 409, 429, 5xx, 529, connection errors, a 200 that is not a message.
        :raises RequestRefused: any other 4xx.
        """
        with self._api_errors():
            raw = self.client.messages.with_raw_response.create(**self._kwargs(request))
            # the body as the server sent it, not the SDK's model of it: a block type the SDK does
            # not know (or knows under another shape) and its null fields are recorded, and sent
            # back on the next turn, exactly as received
            out = json.loads(raw.http_response.text)
        return check_message(out)  # a JSON array, a number, null, a foreign object: TransientError

    def stream(self, request: Request, on_delta: OnDelta) -> Response:
        """
        One call of messages.create with ``stream: true``: each delta goes to `on_delta` as it
        arrives; the message folded from the events (as received, like :meth:`create`'s body).

        :raises StreamCut: `on_delta` raised :class:`StopStream` (the connection is closed there).
        :raises TransientError: as :meth:`create`, and an ``error`` event in the stream (an
            ``overloaded_error`` as a 529), or a stream that ends before ``message_stop``.
        :raises RequestRefused: as :meth:`create`.
        """
        with (
            self._api_errors(),
            self.client.messages.with_streaming_response.create(**self._kwargs(request), stream=True) as raw,
        ):
            return fold_stream(sse_events(raw.iter_lines()), on_delta)
        raise AssertionError("unreachable")  # _api_errors re-raises

    def _kwargs(self, request: Request) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": request.messages,
        }
        if request.system:
            kwargs["system"] = request.system
        if request.tools:
            kwargs["tools"] = request.tools
        return kwargs

    @contextlib.contextmanager
    def _api_errors(self) -> Iterator[None]:
        """The SDK's errors as :class:`TransientError` / :class:`RequestRefused`."""
        a = self._anthropic
        try:
            yield
        except a.APIStatusError as e:
            if e.status_code in RETRYABLE_4XX or e.status_code >= 500:
                headers = e.response.headers if e.response is not None else {}
                after = headers.get("retry-after")
                after_s = parse_retry_after(after)
                ms = parse_retry_after(headers.get("retry-after-ms"))  # Anthropic's, in milliseconds
                raise TransientError(
                    f"HTTP {e.status_code}: {e.message}",
                    status=e.status_code,
                    retry_after_s=ms / 1000 if ms is not None else after_s,
                    retry_after=after,
                ) from e
            raise RequestRefused(f"HTTP {e.status_code}: {e.message}", status=e.status_code) from e
        except (a.APIConnectionError, a.APITimeoutError) as e:
            raise TransientError(f"connection: {e}") from e
        except (ValueError, a.APIResponseValidationError) as e:  # a 200 whose body is not JSON
            raise TransientError(f"HTTP 200 with a body that is not JSON: {e}", status=200) from e


# --- openai ----------------------------------------------------------------------------------

# finish_reason of a Chat Completions choice -> the Messages API's stop_reason the loop reads
_OPENAI_STOP = {
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "stop": "end_turn",
    "length": "max_tokens",
}


def to_chat_completions(request: Request) -> dict[str, Any]:
    """
    The Chat Completions arguments for a Messages API request: the system prompt as a system
    message; an assistant turn's text as its content and its tool_use blocks as tool_calls
    (arguments as JSON text); a user turn's tool_result blocks as tool messages (tool_call_id, the
    result's text), its text blocks as a user message; tools as functions (input_schema as
    parameters). Blocks Chat Completions has no place for (thinking) are left out.
    """
    messages: list[dict[str, Any]] = [{"role": "system", "content": request.system}] if request.system else []
    for m in request.messages:
        blocks = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
        if m["role"] == "assistant":
            out: dict[str, Any] = {"role": "assistant", "content": text or None}
            calls = [
                {
                    "id": b["id"],
                    "type": "function",
                    "function": {"name": b["name"], "arguments": json.dumps(b.get("input", {}))},
                }
                for b in blocks
                if b.get("type") == "tool_use"
            ]
            if calls:
                out["tool_calls"] = calls
            messages.append(out)
            continue
        for b in blocks:
            if b.get("type") == "tool_result":
                c = b.get("content")
                body = (
                    c
                    if isinstance(c, str)
                    else "".join(str(x.get("text", "")) if isinstance(x, dict) else str(x) for x in (c or []))
                )
                messages.append({"role": "tool", "tool_call_id": b["tool_use_id"], "content": body})
        if text:
            messages.append({"role": "user", "content": text})
    kwargs: dict[str, Any] = {
        "model": request.model,
        "messages": messages,
        "max_completion_tokens": request.max_tokens,
    }
    if request.tools:
        kwargs["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t["name"],
                    "description": t.get("description", ""),
                    "parameters": t.get("input_schema", {"type": "object"}),
                },
            }
            for t in request.tools
        ]
    return kwargs


def from_chat_completion(out: Any) -> Response:
    """
    A Chat Completions answer as a Messages-API-shaped response: the message's text as a text block,
    each tool call as a tool_use block (its JSON arguments parsed; arguments that are not a JSON
    object are kept as ``{"_arguments": text}``, which the tool's argument model refuses, telling the
    model), finish_reason as stop_reason, and usage as input (prompt less cached), cache-read and
    output tokens. :raises TransientError: a 200 whose body is not a chat completion.
    """
    choices = out.get("choices") if isinstance(out, dict) else None
    usage = out.get("usage") if isinstance(out, dict) else None
    if not (
        isinstance(choices, list) and choices and isinstance(choices[0], dict) and isinstance(usage, dict)
    ):
        shown = json.dumps(out, default=str)[:200]
        raise TransientError(f"HTTP 200 with a body that is not a chat completion: {shown}", status=200)
    choice = choices[0]
    msg = choice.get("message") or {}
    content: list[dict[str, Any]] = []
    if msg.get("content"):
        content.append({"type": "text", "text": str(msg["content"])})
    if msg.get("refusal"):
        content.append({"type": "text", "text": str(msg["refusal"])})
    for tc in msg.get("tool_calls") or []:
        fn = tc.get("function") or {}
        try:
            args = json.loads(fn.get("arguments") or "{}")
        except ValueError:
            args = None
        content.append(
            {
                "type": "tool_use",
                "id": str(tc.get("id")),
                "name": str(fn.get("name")),
                "input": args if isinstance(args, dict) else {"_arguments": fn.get("arguments")},
            }
        )
    finish = str(choice.get("finish_reason") or "stop")
    cached = int(((usage.get("prompt_tokens_details") or {}).get("cached_tokens")) or 0)
    prompt = int(usage.get("prompt_tokens") or 0)
    return {
        "id": out.get("id"),
        "type": "message",
        "role": "assistant",
        "model": out.get("model"),
        "content": content,
        "stop_reason": _OPENAI_STOP.get(finish, finish),
        "usage": {
            "input_tokens": max(0, prompt - cached),
            "output_tokens": int(usage.get("completion_tokens") or 0),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": cached,
        },
    }


class OpenAIProvider:
    """
    OpenAI's Chat Completions API with tools, through the official ``openai`` SDK
    (``OPENAI_API_KEY``; the base URL from ``OPENAI_BASE_URL`` or the ``base_url`` argument). The
    request is translated from the Messages API shape the loop speaks and the answer back
    (:func:`to_chat_completions`, :func:`from_chat_completion`): the transcript keeps the
    translated blocks, so a resumed agent sends the same conversation again. The SDK's own retries
    are off, as for Anthropic; errors map to the same classes.
    """

    name = "openai"

    def __init__(
        self, *, api_key: str | None = None, base_url: str | None = None, timeout_s: float = 600.0
    ) -> None:
        import openai

        self._openai = openai
        self.client = openai.OpenAI(
            api_key=api_key or os.environ.get("OPENAI_API_KEY"),
            base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
            max_retries=0,
            timeout=timeout_s,
        )

    def create(self, request: Request) -> Response:
        """
        One call of chat.completions.create.

        :raises TransientError: 408, 409, 429, 5xx, connection errors, a 200 that is not a chat completion.
        :raises RequestRefused: any other 4xx.
        """
        o = self._openai
        try:
            raw = self.client.chat.completions.with_raw_response.create(**to_chat_completions(request))
            out = json.loads(raw.http_response.text)
        except o.APIStatusError as e:
            if e.status_code in RETRYABLE_4XX or e.status_code >= 500:
                headers = e.response.headers if e.response is not None else {}
                after = headers.get("retry-after")
                ms = parse_retry_after(headers.get("retry-after-ms"))
                raise TransientError(
                    f"HTTP {e.status_code}: {e.message}",
                    status=e.status_code,
                    retry_after_s=ms / 1000 if ms is not None else parse_retry_after(after),
                    retry_after=after,
                ) from e
            raise RequestRefused(f"HTTP {e.status_code}: {e.message}", status=e.status_code) from e
        except (o.APIConnectionError, o.APITimeoutError) as e:
            raise TransientError(f"connection: {e}") from e
        except (ValueError, o.APIResponseValidationError) as e:
            raise TransientError(f"HTTP 200 with a body that is not JSON: {e}", status=200) from e
        return from_chat_completion(out)


# --- offline ---------------------------------------------------------------------------------


@dataclass
class OfflineRequest:
    """What an offline policy decides from."""

    request: Request
    tool_names: list[str]
    turn: int  # assistant turns so far (0 on the first call)
    tool_results: list[dict[str, Any]] = field(default_factory=list)  # the last user message's results

    @property
    def task(self) -> str:
        """The text of the first user message."""
        first = self.request.messages[0]["content"] if self.request.messages else ""
        if isinstance(first, str):
            return first
        return "".join(b.get("text", "") for b in first if b.get("type") == "text")

    def tools_called(self) -> list[str]:
        """Names of the tools already called in this conversation, in order."""
        return [
            b["name"]
            for m in self.request.messages
            if m["role"] == "assistant"
            for b in (m["content"] if isinstance(m["content"], list) else [])
            if b.get("type") == "tool_use"
        ]


@dataclass
class OfflineTurn:
    """A policy's decision: text and tool calls (``{"name", "input"}``), and why the turn stops."""

    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str | None = None  # default: tool_use when there are tool calls, else end_turn


Policy = Callable[[OfflineRequest], OfflineTurn]
_POLICIES: list[tuple[Callable[[frozenset[str]], bool], Policy]] = []
_POLICIES_LOCK = threading.Lock()


def register_policy(applies: Callable[[frozenset[str]], bool], policy: Policy) -> None:
    """
    Register an offline policy. For each call the offline model picks the most recently
    registered policy whose `applies(tool_names)` is true, else :func:`default_policy`.

    Example (the review job)::

        register_policy(lambda names: {"read_lines", "search", "flag", "finish"} <= names, review_policy)

    :param applies: predicate on the frozenset of tool names offered in the request.
    :param policy: ``policy(OfflineRequest) -> OfflineTurn``; must be deterministic in its input.
    """
    with _POLICIES_LOCK:
        _POLICIES.append((applies, policy))


def choose_policy(tool_names: Iterable[str]) -> Policy:
    """The policy the offline model uses for these tools."""
    names = frozenset(tool_names)
    with _POLICIES_LOCK:
        for applies, policy in reversed(_POLICIES):
            if applies(names):
                return policy
    return default_policy


def example_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Deterministic arguments for a JSON schema: defaults, else the first enum value, else a stub."""
    out: dict[str, Any] = {}
    props = schema.get("properties", {})
    for name in schema.get("required", list(props)):
        p = props.get(name, {})
        if "default" in p:
            out[name] = p["default"]
        elif "enum" in p:
            out[name] = p["enum"][0]
        else:
            out[name] = {
                "string": name,
                "integer": 1,
                "number": 1.0,
                "boolean": True,
                "array": [],
                "object": {},
            }.get(p.get("type", "string"), name)
    return out


def default_policy(req: OfflineRequest) -> OfflineTurn:
    """Call each offered tool once, in order, one per turn; then end the turn with a summary."""
    called = req.tools_called()
    for t in req.request.tools:
        if t["name"] not in called:
            return OfflineTurn(
                text=f"Calling {t['name']}.",
                tool_calls=[{"name": t["name"], "input": example_arguments(t.get("input_schema", {}))}],
            )
    results = [r.get("content") for r in req.tool_results]
    summary = f"Done: {req.task[:200]}" + (
        f" (last results: {json.dumps(results, default=str)[:500]})" if results else ""
    )
    return OfflineTurn(text=summary)


def _tokens(value: Any) -> int:
    return max(1, len(json.dumps(value, default=str, sort_keys=True)) // 4)


OFFLINE_DELTA_MS = 10.0
OFFLINE_DELTA_CHARS = 4


def offline_delta_ms() -> float:
    """
    Milliseconds between two deltas of the offline model's streamed answers:
    ``PGFLIGHT_OFFLINE_DELTA_MS`` (default 10: a 4-character delta every 10 ms, about 100 tokens
    a second, so a reader sees the text arrive; 0 streams as fast as it folds).
    """
    return env_number("PGFLIGHT_OFFLINE_DELTA_MS", OFFLINE_DELTA_MS)


class OfflineProvider:
    """pgflight's deterministic offline model (model name ``offline``, priced at 0 USD)."""

    name = "offline"

    def stream(self, request: Request, on_delta: OnDelta) -> Response:
        """
        The answer of :meth:`create`, streamed: its text and each tool call's input as JSON text
        in deltas of 4 characters (:func:`message_events`), ``PGFLIGHT_OFFLINE_DELTA_MS`` apart,
        each passed to `on_delta`; returns the message folded from them, equal to :meth:`create`'s.

        :raises StreamCut: `on_delta` raised :class:`StopStream`.
        """
        pause_s = offline_delta_ms() / 1000.0

        def paced(events: list[tuple[str, dict[str, Any]]]) -> Iterator[tuple[str, dict[str, Any]]]:
            for event in events:
                if pause_s > 0 and event[0] == "content_block_delta":
                    time.sleep(pause_s)
                yield event

        return fold_stream(paced(message_events(self.create(request), OFFLINE_DELTA_CHARS)), on_delta)

    def create(self, request: Request) -> Response:
        """Answer by the policy for the offered tools; deterministic in the request."""
        last = request.messages[-1] if request.messages else {"content": []}
        results = [
            b
            for b in (last["content"] if isinstance(last["content"], list) else [])
            if b.get("type") == "tool_result"
        ]
        turn_no = sum(1 for m in request.messages if m["role"] == "assistant")
        req = OfflineRequest(request, [t["name"] for t in request.tools], turn_no, results)
        turn = choose_policy(req.tool_names)(req)
        digest = hashlib.sha256(
            json.dumps([request.system, request.messages], sort_keys=True, default=str).encode()
        ).hexdigest()[:20]
        content: list[dict[str, Any]] = []
        if turn.text:
            content.append({"type": "text", "text": turn.text})
        for i, call in enumerate(turn.tool_calls):
            content.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_off_{digest}_{i}",
                    "name": call["name"],
                    "input": call.get("input", {}),
                }
            )
        if not content:
            content.append({"type": "text", "text": ""})
        stop = turn.stop_reason or ("tool_use" if turn.tool_calls else "end_turn")
        return {
            "id": f"msg_off_{digest}",
            "type": "message",
            "role": "assistant",
            "model": "offline",
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": _tokens([request.system, request.messages, request.tools]),
                "output_tokens": _tokens(content),
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }


# --- scripted --------------------------------------------------------------------------------


class ScriptedProvider:
    """
    Returns the given responses in order (an Exception item is raised instead); for tests.
    A callable item is called with the request and its result used.
    """

    name = "scripted"

    def __init__(self, script: Iterable[Response | BaseException | Callable[[Request], Response]]) -> None:
        self.script = list(script)
        self.requests: list[Request] = []
        self._lock = threading.Lock()

    def create(self, request: Request) -> Response:
        """The next scripted item. :raises IndexError: the script ran out."""
        with self._lock:
            self.requests.append(request)
            item = self.script.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item(request) if callable(item) else item


_NAMED: dict[str, Callable[[], Provider]] = {
    "offline": OfflineProvider,
    "anthropic": AnthropicProvider,
    "openai": OpenAIProvider,
}
OPENAI_MODEL_PREFIXES = ("gpt-", "o1", "o3", "o4", "chatgpt-")


def register_provider(name: str, factory: Callable[[], Provider]) -> None:
    """Make a provider available to agents by name (e.g. a scripted one in a test's recipe module)."""
    _NAMED[name] = factory


def get_provider(name: str | None, model: str) -> Provider:
    """
    The provider called `name`; by default ``openai`` for an OpenAI model name (gpt-…, o1…, o3…,
    o4…) when ``OPENAI_API_KEY`` is set, else ``anthropic`` when ``ANTHROPIC_API_KEY`` is set and
    the model is not ``offline``, else ``offline``.

    :raises KeyError: unknown provider name.
    """
    if name is None and model.startswith(OPENAI_MODEL_PREFIXES) and os.environ.get("OPENAI_API_KEY"):
        name = "openai"
    if name is None:
        name = "anthropic" if os.environ.get("ANTHROPIC_API_KEY") and model != "offline" else "offline"
    if name not in _NAMED:
        raise KeyError(f"unknown model provider {name!r}; known: {sorted(_NAMED)}")
    return _NAMED[name]()


def create_with_retries(
    provider: Provider,
    request: Request,
    *,
    on_error: Callable[[dict[str, Any]], None] | None = None,
    on_request: Callable[[], None] | None = None,
    max_tries: int = 6,
    base_s: float | None = None,
    max_s: float = 30.0,
    max_retry_after: float | None = None,
    rate_limit_budget_s: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
    on_delta: OnDelta | None = None,
) -> tuple[Response, int]:
    """
    One model call with transient errors retried: exponential backoff with jitter (honouring
    retry-after), each error reported to `on_error` before the wait.

    Rate limits (429, 529) do not count toward `max_tries`: each is waited out (the server's
    Retry-After, capped at `max_retry_after` seconds) and reported with ``rate_limited: true`` and
    the wait, until the waits would pass `rate_limit_budget_s` seconds in all.

    :param on_request: called before every request (the caller's hard cap may raise there).
    :param on_delta: stream the response (a provider with ``stream``), each delta passed here; a
        provider without it answers whole. A try that fails mid-stream is asked again from the
        start: its deltas were passed already.
    :param base_s: first delay in seconds (default ``PGFLIGHT_AGENT_BACKOFF_S`` or 1).
    :param max_retry_after: most seconds of one wait (default :func:`max_retry_after_s`).
    :param rate_limit_budget_s: most seconds of rate-limit waits in this call (None: no limit).
    :return: the response and how many transient errors were retried.
    :raises TransientError: a non-rate-limit error still failing after `max_tries` tries.
    :raises RateLimited: still rate-limited when the next wait would pass `rate_limit_budget_s`.
    :raises Fatal: the API refused the request (:class:`RequestRefused`): reported, never asked again.
    :raises StreamCut: `on_delta` stopped the stream.
    """
    base = base_s if base_s is not None else float(os.environ.get("PGFLIGHT_AGENT_BACKOFF_S", "1"))
    cap = max_retry_after if max_retry_after is not None else max_retry_after_s()
    n = retries = limited = 0
    waited = 0.0
    while True:
        if on_request is not None:
            on_request()
        try:
            stream = getattr(provider, "stream", None) if on_delta is not None else None
            if stream is not None and on_delta is not None:
                return stream(request, on_delta), retries
            return provider.create(request), retries
        except StreamCut as e:
            e.retries = retries
            raise
        except RequestRefused as e:
            if on_error is not None:
                on_error(
                    {"type": "api_error", "status": e.status, "message": str(e)[:2000], "try": retries + 1}
                    | {"retry_in_s": None, "refused": True}
                )
            raise Fatal(f"the model API refused the request, asking again cannot help: {e}") from e
        except TransientError as e:
            retries += 1
            if e.rate_limited:
                limited += 1
                k = limited
            else:
                n += 1
                k = n
            backoff = min(max_s, base * 2 ** (k - 1)) * (1 + 0.2 * (2 * random.random() - 1))
            delay = min(cap, e.retry_after_s if e.retry_after_s is not None else backoff)
            give_up = (not e.rate_limited and n >= max_tries) or (
                e.rate_limited and rate_limit_budget_s is not None and waited + delay > rate_limit_budget_s
            )
            error: dict[str, Any] = {
                "type": "api_error",
                "status": e.status,
                "message": str(e)[:2000],
                "try": retries,
                "retry_in_s": None if give_up else round(delay, 3),
            }
            if e.rate_limited:
                error.update(rate_limited=True, wait_s=None if give_up else round(delay, 3))
                if e.retry_after is not None:
                    error["retry_after"] = e.retry_after[:200]
            if on_error is not None:
                on_error(error)
            if give_up:
                if e.rate_limited:
                    raise RateLimited(
                        f"rate-limited (HTTP {e.status}) after {waited:.3g} s of waits; the next wait of "
                        f"{delay:.3g} s would pass the budget of {rate_limit_budget_s:.3g} s",
                        retry_after_s=delay,
                    ) from e
                raise
            sleep(delay)
            waited += delay if e.rate_limited else 0.0
