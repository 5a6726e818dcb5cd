"""
The review agent's tools, as plain functions over one document.

``read_lines(start, end)``, ``search(pattern)``, ``flag(category, severity, quote, line_start,
line_end)`` and ``finish(summary)``. Each takes the `ReviewDocument` and a pydantic argument
model (the model's ``tool_use.input`` validated), and returns the text of the tool result or, for
`flag`, the validated flag. Bad arguments raise `ToolError`, whose message is meant to go back to
the model as an ``is_error`` tool result. `TOOL_SPECS` are the Anthropic tool definitions.

The wire format of `read_lines` and `search` results is one line per document line,
``<number><TAB><text>``; `parse_numbered_lines` reads it back (the offline policy does, to learn
the text it has read).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from pgflight_review.clauses import CATEGORIES, MAX_FINDING_LINES, Category, Severity, cited_text, collapse
from pgflight_review.discovery import read_document

#: Most lines one `read_lines` call returns.
MAX_READ_LINES: Final = 500
#: Longest line text returned; longer lines are cut and marked.
MAX_LINE_CHARS: Final = 2000
#: Most matching lines one `search` call returns.
MAX_SEARCH_HITS: Final = 100
#: Longest line range one flag may cite (twice what clause detection ever cites).
MAX_FLAG_LINES: Final = 2 * MAX_FINDING_LINES
_CUT_MARK: Final = " [line cut]"
_NUMBERED: Final = re.compile(r"^\s*(\d+)\t(.*)$")


class ToolError(ValueError):
    """The tool call cannot be carried out; the message is returned to the model as an error result."""


@dataclass(frozen=True)
class ReviewDocument:
    """The document a review agent works on: its path and lines (1-based through the tools)."""

    path: str
    lines: list[str]

    @classmethod
    def load(cls, path: str, *, expected_sha256: str | None = None) -> ReviewDocument:
        """
        :raises pgflight_review.discovery.UnreadableDocument: see `read_document`.
        """
        return cls(path, read_document(path, expected_sha256=expected_sha256).lines)

    @property
    def line_count(self) -> int:
        return len(self.lines)


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")
    #: (first, last) field names of a line range that must be ordered, if the tool takes one.
    _range: ClassVar[tuple[str, str] | None] = None

    @model_validator(mode="after")
    def _ordered_range(self) -> Self:
        if self._range is not None:
            first, last = self._range
            if getattr(self, last) < getattr(self, first):
                raise ValueError(f"{last} must be >= {first}")
        return self


class ReadLinesArgs(_Args):
    """Return lines `start`..`end` (1-based, inclusive) of the document, each prefixed by its number."""

    start: int = Field(ge=1, description="first line, 1-based")
    end: int = Field(ge=1, description="last line, inclusive; at most 500 lines per call")
    _range = ("start", "end")


class SearchArgs(_Args):
    """Find the lines matching a regular expression (Python syntax, case-insensitive)."""

    pattern: str = Field(min_length=1, max_length=200, description="regular expression, case-insensitive")


class FlagArgs(_Args):
    """Record one finding: a clause of the given category, cited by line range and verbatim quote."""

    category: Category = Field(description="one of: " + ", ".join(CATEGORIES))
    severity: Severity = Field(description="high, medium or low")
    quote: str = Field(min_length=1, max_length=1000, description="text copied from the cited lines")
    line_start: int = Field(ge=1, description="first cited line, 1-based")
    line_end: int = Field(ge=1, description="last cited line, inclusive")
    _range = ("line_start", "line_end")


class FinishArgs(_Args):
    """End the review with a short summary: license family, main risks, anything unclear."""

    summary: str = Field(min_length=1, max_length=4000)


def format_numbered(numbered: list[tuple[int, str]]) -> str:
    """:return: ``<number>\\t<text>`` lines, texts cut at `MAX_LINE_CHARS`."""
    return "\n".join(
        f"{n}\t{text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + _CUT_MARK}"
        for n, text in numbered
    )


def parse_numbered_lines(result: str) -> dict[int, str]:
    """
    Read a `read_lines` or `search` result back into ``{line number: text}``.

    :param result: the tool result text; lines that are not ``<number>\\t<text>`` are ignored.
    """
    lines: dict[int, str] = {}
    for raw in result.split("\n"):
        m = _NUMBERED.match(raw)
        if m:
            lines[int(m.group(1))] = m.group(2).removesuffix(_CUT_MARK)
    return lines


def read_lines(doc: ReviewDocument, args: ReadLinesArgs) -> str:
    """
    :return: the lines `args.start`..`min(args.end, line_count)`, numbered.
    :raises ToolError: `start` beyond the last line, or more than `MAX_READ_LINES` asked for.
    """
    if args.start > doc.line_count:
        raise ToolError(f"start {args.start} is past the end: the document has {doc.line_count} lines")
    if args.end - args.start + 1 > MAX_READ_LINES:
        raise ToolError(f"at most {MAX_READ_LINES} lines per call; asked for {args.end - args.start + 1}")
    end = min(args.end, doc.line_count)
    return format_numbered([(n, doc.lines[n - 1]) for n in range(args.start, end + 1)])


def search(doc: ReviewDocument, args: SearchArgs) -> str:
    """
    :return: the matching lines, numbered (at most `MAX_SEARCH_HITS`, then a note), or
        ``no match`` when none matches.
    :raises ToolError: the pattern is not a valid regular expression.
    """
    try:
        rx = re.compile(args.pattern, re.IGNORECASE)
    except re.error as exc:
        raise ToolError(f"invalid regular expression: {exc}") from None
    hits = [(n, line) for n, line in enumerate(doc.lines, start=1) if rx.search(line[:MAX_LINE_CHARS])]
    if not hits:
        return "no match"
    text = format_numbered(hits[:MAX_SEARCH_HITS])
    if len(hits) > MAX_SEARCH_HITS:
        text += f"\n[{len(hits) - MAX_SEARCH_HITS} more matches not shown]"
    return text


def flag(doc: ReviewDocument, args: FlagArgs) -> FlagArgs:
    """
    Validate a finding against the document.

    :return: the flag, unchanged, when it cites real lines and its quote occurs in them
        (compared with whitespace collapsed and case ignored).
    :raises ToolError: a line beyond the document, a range over `MAX_FLAG_LINES`, or a quote that
        is not in the cited lines.
    """
    if args.line_end > doc.line_count:
        raise ToolError(f"line_end {args.line_end} is past the end: the document has {doc.line_count} lines")
    if args.line_end - args.line_start + 1 > MAX_FLAG_LINES:
        raise ToolError(f"cite at most {MAX_FLAG_LINES} lines per flag")
    quote = collapse(args.quote).casefold()
    if not quote or quote not in cited_text(doc.lines, args.line_start, args.line_end).casefold():
        raise ToolError(f"the quote does not occur in lines {args.line_start}-{args.line_end}")
    return args


def finish(doc: ReviewDocument, args: FinishArgs) -> str:
    """:return: an acknowledgement; the summary itself is the step's output."""
    return f"review of {doc.path} finished"


def _spec(name: str, model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema.pop("description", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return {"name": name, "description": (model.__doc__ or "").strip(), "input_schema": schema}


ToolName = Literal["read_lines", "search", "flag", "finish"]
#: Argument model of each tool, by name.
TOOL_ARGS: Final[dict[str, type[_Args]]] = {
    "read_lines": ReadLinesArgs,
    "search": SearchArgs,
    "flag": FlagArgs,
    "finish": FinishArgs,
}
#: Anthropic Messages API tool definitions for the review agent.
TOOL_SPECS: Final[list[dict[str, Any]]] = [_spec(name, model) for name, model in TOOL_ARGS.items()]


def run_tool(doc: ReviewDocument, name: str, tool_input: dict[str, Any]) -> str | FlagArgs:
    """
    Validate `tool_input` and run tool `name` on `doc`: one entry point for a tool executor.

    :return: the result text, or the validated `FlagArgs` for `flag`.
    :raises ToolError: unknown tool, invalid arguments (the pydantic message), or the tool's own refusal.
    """
    model = TOOL_ARGS.get(name)
    if model is None:
        raise ToolError(f"unknown tool {name!r}; tools: {', '.join(TOOL_ARGS)}")
    try:
        args = model.model_validate(tool_input)
    except ValueError as exc:  # pydantic.ValidationError is a ValueError
        raise ToolError(f"invalid arguments for {name}: {exc}") from None
    if isinstance(args, ReadLinesArgs):
        return read_lines(doc, args)
    if isinstance(args, SearchArgs):
        return search(doc, args)
    if isinstance(args, FlagArgs):
        return flag(doc, args)
    assert isinstance(args, FinishArgs)
    return finish(doc, args)
