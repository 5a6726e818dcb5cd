"""
How values look on the inspector's pages: escaped, made printable, clipped with a link to the
whole value, durations and ages in words, the step tree, the transcript by iteration and the diff
of two attempts. Pure functions of the rows `queries` returns; no database here.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from markupsafe import Markup, escape

from pgflight import fmt
from pgflight.models import decode_json

CLIP = 2000  # characters shown before "show whole"
TREE_CHILDREN = 100  # children drawn under one parent in a run's tree
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SECRET_KEYS = ("token",)  # event details may name fencing tokens: operators only


class RawJson(str):
    """
    A JSON value the inspector did not decode (nested deeper than Python's decoder goes, about
    1,000 levels, or not decodable by Python, e.g. a number of more than 4,300 digits): its text
    as the database sent it, and why.
    """

    reason: str

    def __new__(cls, text: str, reason: str) -> RawJson:
        obj = super().__new__(cls, text)
        obj.reason = reason
        return obj


def loads(data: str | bytes) -> Any:
    """
    Decode a json or jsonb value from the database for the pages; one that Python cannot decode
    (too deeply nested, a number too long) comes back as :class:`RawJson`, never an exception: a
    page shows what it cannot render as text.
    """
    text = data if isinstance(data, str) else bytes(data).decode("utf-8", errors="replace")
    value, error = decode_json(text)
    if isinstance(error, RecursionError):
        return RawJson(text, "nested deeper than the inspector decodes")
    if error is not None:
        return RawJson(text, f"not decodable ({str(error)[:200]})")
    return value


def text_of(value: Any) -> str:
    """A value as readable text: a string as is (control characters made visible), else JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", value)
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except RecursionError:
        pass
    try:  # the C encoder goes deeper than the indenting one
        return json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):
        return f"(a {type(value).__name__} nested too deeply for the inspector to show)"


def show(value: Any, whole_url: str | None = None, limit: int = CLIP) -> Markup:
    """
    The value in a <pre>, escaped; past `limit` characters clipped with a link to `whole_url`.

    :param whole_url: a page that serves the whole value; without one the clip says so.
    """
    text = text_of(value)
    note = (
        Markup('<p class="raw">shown as raw JSON text: {}</p>').format(value.reason)
        if isinstance(value, RawJson)
        else Markup("")
    )
    if len(text) <= limit:
        return Markup('<pre class="val">{}</pre>{}').format(text, note)
    more = len(text) - limit
    link = (
        Markup(' <a class="whole" href="{}">show whole ({:,} characters)</a>').format(whole_url, len(text))
        if whole_url
        else Markup("")
    )
    return Markup('<pre class="val">{}</pre><p class="clip">… {:,} more characters clipped.{}</p>{}').format(
        text[:limit], more, link, note
    )


def redact(detail: Any, operator: bool) -> Any:
    """An event's detail without fencing tokens unless the viewer is an operator."""
    if operator or not isinstance(detail, dict):
        return detail
    return {k: ("(hidden)" if any(s in k for s in _SECRET_KEYS) else v) for k, v in detail.items()}


def seconds(start: datetime | None, end: datetime | None) -> float | None:
    """Seconds from `start` to `end` (now when None); None when there is no start."""
    if start is None:
        return None
    return ((end or datetime.now(UTC)) - start).total_seconds()


def dur(value: float | None) -> str:
    """Seconds in words (:func:`pgflight.fmt.duration`: 850 ms, 4 min 05 s, 2 d 4 h); '-' for None."""
    return "-" if value is None else fmt.duration(value)


def age(ts: datetime | None) -> str:
    """How long ago `ts` was, in words ('12.3 s ago'); '-' for None."""
    return "-" if ts is None else dur(seconds(ts, None)) + " ago"


def stamp(ts: datetime | None) -> str:
    """`ts` in UTC to the millisecond, ISO 8601 with a Z ('2026-11-30 22:05:01.123Z'); '-' for None."""
    return "-" if ts is None else ts.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def usd(value: Any) -> str:
    """An amount in USD as the CLI prints it (:func:`pgflight.fmt.money`: '$0.0012'); '-' for None."""
    return "-" if value is None else fmt.money(value)


def num(value: int | float | None) -> str:
    """A count grouped by thousands ('1,234,567'); '-' for None."""
    return "-" if value is None else fmt.number(value)


def count(n: int | None, noun: str, plural: str | None = None) -> str:
    """'1 tool call', '2,700 tokens' (:func:`pgflight.fmt.count`); '-' for None."""
    return "-" if n is None else fmt.count(n, noun, plural)


def line(value: Any, limit: int = CLIP) -> str:
    """
    `value` as one line for a table cell: an error's ``type: message`` (the rest of it is on the
    step's page), any other value as text; whitespace runs made one space, at most `limit` characters.

    :return: the text a cell shows, cut to its width by CSS with an ellipsis.
    """
    if isinstance(value, dict) and isinstance(value.get("message"), str):
        kind = value.get("type")
        value = f"{kind}: {value['message']}" if isinstance(kind, str) and kind else value["message"]
    text = " ".join(text_of(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def whole(value: Any, limit: int = CLIP) -> str:
    """`value` as text for a cell's title (hover): all of it up to `limit` characters."""
    text = text_of(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- the step tree ------------------------------------------------------------------------------


@dataclass
class Node:
    """A step in the run's tree with its children (drawn as nested <details>)."""

    row: dict[str, Any]
    children: list[Node] = field(default_factory=list)
    hidden: int = 0  # children not drawn (past TREE_CHILDREN): the step's page lists them

    @property
    def duration_s(self) -> float | None:
        return seconds(self.row["started_at"], self.row["finished_at"])


def tree(rows: list[dict[str, Any]]) -> list[Node]:
    """Nest the run's steps under their parents; a step whose parent was not read becomes a root."""
    nodes = {r["step_id"]: Node(r) for r in rows}
    roots: list[Node] = []
    for n in nodes.values():
        parent = nodes.get(n.row["parent_id"])
        (parent.children if parent else roots).append(n)
    for n in nodes.values():
        if len(n.children) > TREE_CHILDREN:
            n.hidden, n.children = len(n.children) - TREE_CHILDREN, n.children[:TREE_CHILDREN]
    return roots


# --- the transcript ---------------------------------------------------------------------------


@dataclass
class Iteration:
    """One model call and the tool calls it asked for."""

    n: int
    blocks: list[dict[str, Any]] = field(default_factory=list)  # assistant blocks, in order
    results: dict[str, dict[str, Any]] = field(default_factory=dict)  # tool_use_id -> result row
    errors: list[dict[str, Any]] = field(default_factory=list)  # api_error rows
    prompt: list[dict[str, Any]] = field(default_factory=list)  # iteration 0: the task
    call: dict[str, Any] | None = None  # model, tokens, usd, stop_reason
    latency_s: float | None = None


def iterations(rows: list[dict[str, Any]]) -> list[Iteration]:
    """Group transcript rows by iteration; latency is from the previous iteration's last block."""
    out: dict[int, Iteration] = {}
    for r in rows:
        it = out.setdefault(r["iteration"], Iteration(r["iteration"]))
        if r["iteration"] == 0:
            it.prompt.append(r)
        elif r["block_type"] == "tool_result":
            it.results[r["tool_use_id"]] = r
        elif r["block_type"] == "api_error":
            it.errors.append(r)
        else:
            it.blocks.append(r)
        if r["model"] is not None and it.call is None and r["iteration"] > 0:
            it.call = {
                k: r[k]
                for k in ("model", "input_tokens", "output_tokens", "cache_read_tokens", "usd", "stop_reason")
            }
    ordered = [out[k] for k in sorted(out)]
    last: datetime | None = None
    for it in ordered:
        first = min((b["created_at"] for b in it.blocks), default=None)
        if first is not None and last is not None:
            it.latency_s = (first - last).total_seconds()
        stamps = [b["created_at"] for b in it.blocks + it.prompt + list(it.results.values())]
        last = max(stamps, default=last)
    return ordered


def body(row: dict[str, Any]) -> Any:
    """The part of a flight-recorder block a reader wants: the text, the tool's input or its result."""
    content = row["content"]
    if not isinstance(content, dict):
        return content
    key = {"text": "text", "thinking": "thinking", "tool_use": "input", "tool_result": "content"}.get(
        row["block_type"]
    )
    return content.get(key, content) if key else content


def tool_state(use: dict[str, Any], result: dict[str, Any] | None) -> str:
    """In words, what became of a tool call: completed, in flight, interrupted and how resolved."""
    if result is None:
        return "no result recorded"
    if result["status"] == "interrupted":
        return "interrupted: its attempt lapsed while it ran; not resolved yet"
    if result["status"] == "in_flight":
        return "in flight"
    if result["attempt_id"] != use["attempt_id"]:
        return (
            f"interrupted: attempt {use['attempt_id']} lapsed while it ran; "
            f"resolved by attempt {result['attempt_id']}"
        )
    return "completed"


# --- diffs ------------------------------------------------------------------------------------


def attempt_text(attempt: dict[str, Any], trace_rows: list[dict[str, Any]]) -> list[str]:
    """The lines that stand for one attempt in a diff: its status, result, error and its trace."""
    lines = [f"status: {attempt['status']}", f"reason: {attempt['reason'] or ''}"]
    lines += ["result:", *text_of(attempt["result"]).splitlines()]
    lines += ["error:", *text_of(attempt["error"]).splitlines()]
    for r in trace_rows:
        if r["attempt_id"] == attempt["attempt_id"]:
            lines.append(f"[{r['iteration']}.{r['seq']}] {r['role']} {r['block_type']} {r['status']}")
            lines += ["    " + s for s in text_of(r["content"]).splitlines()]
    return lines


def agent_text(agent: dict[str, Any], trace_rows: list[dict[str, Any]]) -> list[str]:
    """The lines that stand for one agent in a fork's diff: model, system prompt, then every block."""
    lines = [f"model: {agent['model']}", "system:", *text_of(agent["system_prompt"]).splitlines()]
    for r in trace_rows:
        if r["block_type"] == "api_error":
            continue
        lines.append(f"[{r['iteration']}.{r['seq']}] {r['role']} {r['block_type']}")
        lines += ["    " + s for s in text_of(r["content"]).splitlines()]
    lines.append(f"result: {text_of(agent['result'])}")
    return lines


def diff(a_lines: list[str], b_lines: list[str], a_name: str, b_name: str) -> list[tuple[str, str]]:
    """A unified diff as (kind, line) pairs, kind one of add, del, hunk, same."""
    out: list[tuple[str, str]] = []
    for line in difflib.unified_diff(a_lines, b_lines, a_name, b_name, lineterm="", n=3):
        kind = (
            "hunk"
            if line.startswith("@@")
            else "add"
            if line.startswith("+")
            else "del"
            if line.startswith("-")
            else "same"
        )
        out.append((kind, line))
    return out


def esc(value: Any) -> Markup:
    """`value` HTML-escaped (markupsafe), for the templates' filters."""
    return escape(value)
