"""
The CLI's listings (``runs``, ``workers``, ``events``, ``dead-letters`` …) at any terminal width,
and their ``--json`` form (:data:`JsonOpt`, :func:`dump_json`).

A :class:`Listing` has two kinds of columns. Whole ones (ids, counts, states, times) are never
cut: each is as wide as its widest cell. Flexible ones (names, recipes, errors, details) share
the width left, and a cell too long for it is cut with an ellipsis, so a row stays one line.
Before this, rich shrank every column alike when a table was wider than the terminal, and at
80 columns ids came out as ``26…`` and a worker's "last seen" over five lines.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Collection, Sequence
from typing import Annotated, Any

import typer
from pydantic import BaseModel
from rich import box
from rich.console import Console, ConsoleOptions, JustifyMethod, RenderResult
from rich.table import Table
from rich.text import Text

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
"""The ``--json`` option every listing command takes: JSON on stdout instead of the table."""


def dump_json(value: BaseModel | Sequence[BaseModel] | Sequence[dict[str, Any]] | dict[str, Any]) -> None:
    """Write a command's answer as JSON (``--json``): models as their JSON dump, indented."""
    if isinstance(value, BaseModel):
        data: Any = value.model_dump(mode="json")
    elif isinstance(value, dict):
        data = value
    else:
        data = [v.model_dump(mode="json") if isinstance(v, BaseModel) else v for v in value]
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


class Listing:
    """
    A table for :meth:`rich.console.Console.print`: the columns named in `flexible` shrink and
    cut their cells with an ellipsis; every other column keeps its widest cell whole.

    :param headers: the column headers, in order (a newline puts a header on two lines).
    :param flexible: the headers of the columns that may be cut (at least one, usually the last).
    :param right: the headers of the columns justified right (numbers).
    :param max_widths: the most cells of a flexible column, by header (e.g. a status change).
    :raises ValueError: a name in `flexible`, `right` or `max_widths` that is not a header.
    """

    def __init__(
        self,
        *headers: str,
        flexible: Collection[str],
        right: Collection[str] = (),
        max_widths: dict[str, int] | None = None,
    ) -> None:
        self.max_widths = dict(max_widths or {})
        unknown = (set(flexible) | set(right) | set(self.max_widths)) - set(headers)
        if unknown:
            raise ValueError(f"not a header: {', '.join(sorted(unknown))}")
        self.headers = headers
        self.flexible = frozenset(flexible)
        self.right = frozenset(right)
        self.rows: list[tuple[Text, ...]] = []

    def add_row(self, *cells: str) -> None:
        """
        Add a row: one cell per header, each rich markup (escape user text with
        :func:`rich.markup.escape`).

        :raises ValueError: not one cell per header.
        """
        if len(cells) != len(self.headers):
            raise ValueError(f"{len(cells)} cells for {len(self.headers)} columns")
        self.rows.append(tuple(_one_line(Text.from_markup(c, overflow="ellipsis")) for c in cells))

    def table(self) -> Table:
        """The rich table: whole columns at their widest cell, flexible ones free to shrink."""
        # two spaces between columns and none at the edges: room for more at 80 columns
        t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
        for i, h in enumerate(self.headers):
            header = Text(h, overflow="ellipsis", no_wrap=True)
            justify: JustifyMethod = "right" if h in self.right else "left"
            if h in self.flexible:
                # wrappable for rich's layout (so it shrinks these first), one line per cell
                t.add_column(header, justify=justify, overflow="ellipsis", max_width=self.max_widths.get(h))
            else:
                widest = max(
                    [*(ln.cell_len for ln in header.split()), *(row[i].cell_len for row in self.rows)]
                )
                t.add_column(header, justify=justify, no_wrap=True, min_width=widest)
        for row in self.rows:
            t.add_row(*row)
        return t

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """Render as :meth:`table`."""
        yield self.table()


def _one_line(text: Text) -> Text:
    """`text` rendered on one line whatever the column's width (cut with its ellipsis)."""
    text.no_wrap = True
    return text
