"""
What PostgreSQL's ``jsonb`` refuses, found before a value is sent.

A step's result, error or effect receipt is JSON the worker sends in a batched write
(``complete_batch``): one value PostgreSQL refuses fails the whole statement and with it every
healthy neighbour in the batch. So each value is checked first, and a bad one
ends only its own step, with the reason and where it is:

- ``NaN`` / ``Infinity`` (Python's :func:`json.dumps` writes them bare; JSON and jsonb have none);
- the NUL character (jsonb cannot store ``\\u0000`` in a string or a key);
- lone surrogates (``"\\ud800"``: not Unicode text; jsonb refuses them);
- object keys that are not strings JSON can keep as they are, values JSON has no type for,
  circular references and nesting deeper than :data:`MAX_DEPTH`;
- more than ``max_bytes`` bytes of JSON text (UTF-8).

:func:`check_json` raises :class:`BadPayload` naming the JSON path (``$.items[3].score``);
:func:`clean_text` turns any text (an error message) into text jsonb stores.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_DEPTH = 512  # nesting levels; PostgreSQL's parser and Python's json both recurse per level
DEFAULT_MAX_BYTES = 16 * 1024 * 1024  # the engine's default settings.max_input_bytes


class BadPayload(ValueError):
    """
    A value PostgreSQL would refuse (or that is over the size cap).

    :ivar path: where, as a JSON path (``$`` is the value itself).
    :ivar problem: what is wrong there, in words.
    """

    def __init__(self, what: str, path: str, problem: str) -> None:
        super().__init__(f"{what} cannot be stored at {path}: {problem}")
        self.what = what
        self.path = path
        self.problem = problem


def check_json(value: Any, *, what: str = "value", max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """
    Check that `value` is JSON PostgreSQL stores as jsonb, and return its JSON text.

    The common case costs one :func:`json.dumps`; only a value that fails it is walked to find the
    path of the problem.

    :param what: names the value in the message (``result``, ``effect receipt 'charge'``).
    :param max_bytes: most bytes of UTF-8 JSON text.
    :return: the JSON text (what the write may send as is).
    :raises BadPayload: the first problem found, with its JSON path.
    """
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False)
        data = text.encode()
    except (ValueError, TypeError, RecursionError, UnicodeEncodeError):
        _walk(value, what)
        raise BadPayload(what, "$", "not JSON") from None  # the walk found nothing more precise
    if "\\u0000" in text:
        _walk(value, what)  # a NUL, or only the six characters \u0000 (legal): the walk decides
    if len(data) > max_bytes:
        raise BadPayload(what, "$", f"{len(data)} bytes of JSON, over the cap of {max_bytes} bytes")
    return text


def _walk(value: Any, what: str) -> None:
    """Raise BadPayload at the first unstorable part of `value` (depth first, in order)."""
    seen: set[int] = set()

    def visit(v: Any, path: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise BadPayload(what, path, f"nesting deeper than {MAX_DEPTH} levels")
        if v is None or isinstance(v, bool | int):
            return
        if isinstance(v, float):
            if not math.isfinite(v):
                name = "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")
                raise BadPayload(what, path, f"{name} (JSON and PostgreSQL's jsonb have no NaN or Infinity)")
            return
        if isinstance(v, str):
            problem = _text_problem(v)
            if problem:
                raise BadPayload(what, path, problem)
            return
        if isinstance(v, dict | list | tuple):
            if id(v) in seen:
                raise BadPayload(what, path, "a circular reference")
            seen.add(id(v))
            if isinstance(v, dict):
                for k, item in v.items():
                    if not isinstance(k, str):
                        if not (k is None or isinstance(k, bool | int | float)):
                            raise BadPayload(
                                what, path, f"a key of type {type(k).__name__}; keys must be strings"
                            )
                        visit(k, f"{path} (key {k!r})", depth + 1)
                        k = json.dumps(k)  # how json.dumps writes a None, bool or number key
                    problem = _text_problem(k)
                    if problem:
                        raise BadPayload(what, f"{path} (key {_quote(k)})", problem)
                    visit(item, _child(path, k), depth + 1)
            else:
                for i, item in enumerate(v):
                    visit(item, f"{path}[{i}]", depth + 1)
            seen.discard(id(v))
            return
        raise BadPayload(what, path, f"a {type(v).__name__}, which JSON has no type for")

    visit(value, "$", 0)


def _text_problem(s: str) -> str | None:
    if "\x00" in s:
        return f"a NUL character (\\u0000) at offset {s.index(chr(0))} of a string; jsonb cannot store it"
    try:
        s.encode()
    except UnicodeEncodeError as e:
        return f"a lone surrogate ({s[e.start]!a}) at offset {e.start} of a string; it is not Unicode text"
    return None


def _quote(key: str) -> str:
    return json.dumps(key)  # ASCII, with NUL and surrogates written as escapes: safe to store


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{_quote(key)}]"


def clean_text(s: str, *, limit: int | None = None) -> str:
    """
    `s` as text jsonb stores: NUL written as ``\\0``, lone surrogates as U+FFFD; cut to `limit`
    characters when given (for error messages, whose text the worker does not control).
    """
    if "\x00" in s:
        s = s.replace("\x00", "\\0")
    try:
        s.encode()
    except UnicodeEncodeError:
        s = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in s)
    return s if limit is None else s[:limit]


def clean_json(value: Any) -> Any:
    """
    A copy of JSON-like `value` that jsonb stores: strings (and keys) through :func:`clean_text`,
    NaN and ±Infinity as null. For data pgflight must keep whatever it holds (a model's answer, a
    tool's output), where failing would only make a retry pay for it again.
    """
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {clean_text(str(k)): clean_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_json(v) for v in value]
    return value
