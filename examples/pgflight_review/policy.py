"""
The offline model's review policy: what a deterministic reviewer answers at each turn.

Interface::

    def review_policy(request: dict) -> tuple[list[dict], str]

`request` is an Anthropic Messages request (``system``, ``tools``, ``messages``). The first user
message is the task, as written by `task_prompt`: it names the document's path and its line
count. The policy answers with the next assistant content blocks (``{"type": "text", ...}`` and
``{"type": "tool_use", "id", "name", "input"}``) and a stop reason, ``tool_use`` or ``end_turn``.

It works only from the conversation, never from the file: the text it knows is what the
``read_lines`` and ``search`` tool results returned. Turn by turn:

1. ``read_lines`` in chunks of `CHUNK_LINES` from the first line it has not seen, until the end
   (a chunk whose result is an error or comes back short is asked again once, then given up);
2. when lines are still missing or the text names no known license, one turn of ``search`` calls
   (`SEARCH_PATTERNS`) to find the licensing language;
3. `clauses.analyze` over the text it read, and one ``flag`` call per finding (up to
   `MAX_FLAGS_PER_TURN` per turn);
4. ``finish(summary)``; after its result, a closing text block and ``end_turn``.

It is a pure function of the request: the same conversation always gets the same answer, and
tool_use ids are derived from the path, the turn and the block index, so a retried iteration
produces identical blocks.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from pgflight_review.clauses import CATEGORIES, CATEGORY_TITLES, SEVERITIES, Analysis, Finding, analyze
from pgflight_review.tools import MAX_READ_LINES, parse_numbered_lines

#: Lines asked for per read_lines call.
CHUNK_LINES: Final = 200
#: Flags per assistant turn.
MAX_FLAGS_PER_TURN: Final = 40
#: How many times a chunk is asked for before its missing lines are given up.
MAX_READ_ATTEMPTS: Final = 2
#: Patterns searched when the reading left gaps or named no known license.
SEARCH_PATTERNS: Final = (
    r"licen[cs]e|permission|permitted|copyright",
    r"SPDX-License-Identifier|warrant|liab",
)

SYSTEM_PROMPT: Final = (
    "You review one legal document (a license or a copyright file) for risky clauses. "
    "Read the whole document with read_lines (at most 500 lines per call), use search to find "
    "specific terms, call flag once per risky clause with its category, severity, a quote copied "
    "verbatim from the cited lines and the line range, then call finish with a short summary "
    "naming the license family. Categories: " + ", ".join(CATEGORIES) + "."
)
_TASK_PATH: Final = re.compile(r"`(?P<path>[^`\n]+)`")
_TASK_LINES: Final = re.compile(r"\((?P<n>\d+) lines?\)|(?P<n2>\d+) lines?\b")


def task_prompt(path: str, line_count: int) -> str:
    """
    The first user message of a document's review; `review_policy` parses it back.

    :param path: the document's path (must not contain a backtick... it is quoted in backticks).
    :param line_count: number of lines of the decoded document.
    """
    return (
        f"Review the legal document `{path}` ({line_count} lines). Read all of it through the tools, "
        "flag every risky clause with a verbatim quote and its lines, then call finish."
    )


def _text_of(content: Any) -> str:
    """The text of a message or tool_result content: a string or a list of text blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


@dataclass
class _State:
    """What the conversation so far tells the reviewer."""

    path: str = ""
    line_count: int | None = None
    turn: int = 0  # assistant messages so far
    known: dict[int, str] = field(default_factory=dict)
    read_attempts: dict[int, int] = field(default_factory=dict)
    last_read_short: bool = False
    searched: set[str] = field(default_factory=set)
    flagged: list[dict[str, Any]] = field(default_factory=list)
    flag_errors: int = 0
    finish_called: bool = False
    tools: set[str] = field(default_factory=lambda: {"read_lines", "search", "flag", "finish"})


def _parse(request: dict[str, Any]) -> _State:
    state = _State()
    if request.get("tools"):
        state.tools = {t.get("name", "") for t in request["tools"] if isinstance(t, dict)}
    uses: dict[str, dict[str, Any]] = {}
    messages = request.get("messages") or []
    for i, message in enumerate(messages):
        role, content = message.get("role"), message.get("content")
        if role == "assistant":
            state.turn += 1
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    _record_use(state, block)
                    uses[str(block.get("id"))] = block
        elif role == "user" and i == 0:
            task = _text_of(content)
            if m := _TASK_PATH.search(task):
                state.path = m.group("path")
            if m := _TASK_LINES.search(task):
                state.line_count = int(m.group("n") or m.group("n2"))
        elif role == "user" and isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    use = uses.get(str(block.get("tool_use_id")))
                    if use is not None:
                        _record_result(state, use, block)
    return state


def _record_use(state: _State, block: dict[str, Any]) -> None:
    name, args = block.get("name"), block.get("input") or {}
    if name == "read_lines":
        for n in range(int(args.get("start", 1)), int(args.get("end", 0)) + 1):
            state.read_attempts[n] = state.read_attempts.get(n, 0) + 1
    elif name == "search":
        state.searched.add(str(args.get("pattern", "")))
    elif name == "flag":
        state.flagged.append(args)
    elif name == "finish":
        state.finish_called = True


def _record_result(state: _State, use: dict[str, Any], result: dict[str, Any]) -> None:
    name, is_error = use.get("name"), bool(result.get("is_error"))
    if name == "flag":
        state.flag_errors += is_error
        return
    if name not in ("read_lines", "search") or is_error:
        if name == "read_lines":
            state.last_read_short = True
        return
    got = parse_numbered_lines(_text_of(result.get("content")))
    state.known.update(got)
    if name == "read_lines":
        args = use.get("input") or {}
        asked = int(args.get("end", 0)) - int(args.get("start", 1)) + 1
        state.last_read_short = len(got) < asked


def _next_read(state: _State) -> tuple[int, int] | None:
    """The next chunk to read, or None when reading is over."""
    if state.line_count is not None:
        for n in range(1, state.line_count + 1):
            if n not in state.known and state.read_attempts.get(n, 0) < MAX_READ_ATTEMPTS:
                return n, min(n + CHUNK_LINES - 1, state.line_count)
        return None
    # line count unknown: read on until a chunk comes back short
    if state.read_attempts and state.last_read_short:
        return None
    start = max(state.read_attempts, default=0) + 1
    return start, start + min(CHUNK_LINES, MAX_READ_LINES) - 1


def _lines(state: _State) -> list[str]:
    last = state.line_count if state.line_count is not None else max(state.known, default=0)
    return [state.known.get(n, "") for n in range(1, last + 1)]


def _flag_input(f: Finding) -> dict[str, Any]:
    return {
        "category": f.category,
        "severity": f.severity,
        "quote": f.quote,
        "line_start": f.line_start,
        "line_end": f.line_end,
    }


def _summary(state: _State, analysis: Analysis) -> str:
    total = analysis.line_count
    read = sum(1 for n in range(1, total + 1) if n in state.known)
    family = analysis.family if analysis.family != "unknown" else "no known license family"
    also = f" (also {', '.join(analysis.families[1:])})" if len(analysis.families) > 1 else ""
    parts = [f"{family}{also}; read {read} of {total} lines."]
    if not state.flagged:
        parts.append("No risky clauses found.")
    else:
        by_sev = {s: sum(1 for f in state.flagged if f.get("severity") == s) for s in SEVERITIES}
        by_cat = {c: sum(1 for f in state.flagged if f.get("category") == c) for c in CATEGORIES}
        parts.append(
            f"{len(state.flagged)} findings ("
            + ", ".join(f"{n} {s}" for s, n in by_sev.items() if n)
            + "): "
            + "; ".join(f"{CATEGORY_TITLES[c].lower()} {n}" for c, n in by_cat.items() if n)
            + "."
        )
    if state.flag_errors:
        parts.append(f"{state.flag_errors} flags were rejected by the tool.")
    return " ".join(parts)


def _blocks(state: _State, text: str, calls: Iterable[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    doc_id = hashlib.sha256(state.path.encode("utf-8", "replace")).hexdigest()[:8]
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
    for i, (name, tool_input) in enumerate(calls):
        blocks.append(
            {
                "type": "tool_use",
                "id": f"toolu_{doc_id}_{state.turn:03d}_{i:02d}",
                "name": name,
                "input": tool_input,
            }
        )
    return blocks


def review_policy(request: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """
    The next assistant turn of a document review.

    :param request: an Anthropic Messages request: ``messages`` (the task first, then assistant
        turns and user tool_result turns), optionally ``tools`` (only the tools listed are used)
        and ``system`` (ignored).
    :return: (content blocks, stop reason): ``tool_use`` while work remains, ``end_turn`` once
        ``finish`` has been called.
    """
    state = _parse(request)
    if state.finish_called:
        return [{"type": "text", "text": f"Review of {state.path} complete."}], "end_turn"
    if "read_lines" in state.tools and (chunk := _next_read(state)) is not None:
        total = f" of {state.line_count}" if state.line_count is not None else ""
        return _blocks(
            state,
            f"Reading lines {chunk[0]}-{chunk[1]}{total}.",
            [("read_lines", {"start": chunk[0], "end": chunk[1]})],
        ), "tool_use"
    analysis = analyze(_lines(state))
    missing = analysis.line_count > len(state.known)
    if (
        "search" in state.tools
        and not state.searched
        and not state.flagged
        and (missing or analysis.family == "unknown")
    ):
        reason = "Some lines could not be read" if missing else "No known license family yet"
        return _blocks(
            state,
            f"{reason}; searching for licensing terms.",
            [("search", {"pattern": p}) for p in SEARCH_PATTERNS],
        ), "tool_use"
    if "flag" in state.tools:
        done = {
            (f.get("category"), f.get("line_start"), f.get("line_end"), f.get("quote")) for f in state.flagged
        }
        todo = [f for f in analysis.findings if (f.category, f.line_start, f.line_end, f.quote) not in done]
        if todo:
            batch = todo[:MAX_FLAGS_PER_TURN]
            return _blocks(
                state,
                f"Flagging {len(batch)} clauses ({analysis.family}).",
                [("flag", _flag_input(f)) for f in batch],
            ), "tool_use"
    return _blocks(
        state, "Finishing the review.", [("finish", {"summary": _summary(state, analysis)})]
    ), "tool_use"
