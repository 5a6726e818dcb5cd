"""
The review's report: ``report.html``, ``report.md`` and ``flags.csv``.

`write_report` takes the per-document results (as the reconcile step collects them from the
children's outputs), the skipped documents, an audit dict queried from the database by the
caller and the run's `RunInfo` (run id, date, engine version, model, host); it computes nothing
about the run itself. `build` turns them into one `Report` (summary first: the documents that
need a lawyer's look, by reason; then the documents by licence family, routine clauses folded),
which the Jinja2 templates in ``templates/`` render as HTML (table of contents, anchors, severity
colours, client-side filtering in a few lines of inline JS, a layout for phones) and Markdown;
autoescaping is on for the HTML.

A report heavier than one page (`SINGLE_PAGE_BYTES`) is paged (`paginate`): ``report.html`` and
``report.md`` are then an index (the run, the summary, each reason's first `INDEX_ROWS`
documents, the families with links to their pages, the audit) and ``pages/`` holds each family's
documents in pages of at most `PAGE_BYTES` of HTML and each longer list in pages of `LIST_ROWS`
rows, in HTML and Markdown alike. ``flags.csv`` is always one complete file.
"""

from __future__ import annotations

import csv
import functools
import os
import re
import socket
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict

from pgflight import fmt
from pgflight_review.clauses import (
    CATEGORIES,
    CATEGORY_TITLES,
    HIGH_CATEGORIES,
    ROUTINE_CATEGORIES,
    SEVERITIES,
    UNKNOWN_FAMILY,
    unreliable_note,
)

#: Audit keys in report order, with their labels; other keys follow in the order given.
AUDIT_LABELS: Final[dict[str, str]] = {
    "steps": "Steps",
    "attempts": "Attempts",
    "retries": "Retries",
    "reclaimed_attempts": "Reclaimed attempts (lease expired)",
    "stale_writes_rejected": "Stale writes rejected",
    "dead_letters": "Dead letters",
    "model_calls": "Model calls",
    "input_tokens": "Input tokens",
    "output_tokens": "Output tokens",
    "tokens": "Tokens",
    "usd": "Cost",
    "wall_time_s": "Wall time",
    "steps_succeeded_twice": "Steps with more than one succeeded attempt (0 unless replayed)",
}
CSV_COLUMNS: Final = (
    "path",
    "family",
    "category",
    "severity",
    "line_start",
    "line_end",
    "citation",
    "quote",
)
TEMPLATES: Final = Path(__file__).parent / "templates"


class FlagRecord(BaseModel):
    """
    One accepted `flag` call, with what the document step added: the licence of the DEP-5
    stanza the clause sits in (`family`) and the quote grown to whole sentences (`context`).
    """

    model_config = ConfigDict(extra="ignore")
    category: str
    severity: str
    quote: str
    line_start: int
    line_end: int
    family: str | None = None
    context: str | None = None
    context_start: int | None = None
    context_end: int | None = None


class DocumentResult(BaseModel):
    """
    One document's review outcome.

    :ivar status: the child step's status (``succeeded``, ``dead_letter``, ``failed``, ...).
    :ivar family: the document's licence, ``unknown`` (or None) when not classified.
    :ivar family_source: where the licence was read: ``metadata``, ``dep5`` or ``text``.
    :ivar step_id: the document's step (for ``pgflight trace``).
    :ivar error: why the review did not succeed, when it did not.
    """

    model_config = ConfigDict(extra="ignore")
    path: str
    family: str | None = None
    family_source: str | None = None
    families: list[str] = []
    flags: list[FlagRecord] = []
    summary: str = ""
    status: str = "succeeded"
    error: str | None = None
    step_id: int | None = None


class SkippedRecord(BaseModel):
    """A document discovery did not submit, and why."""

    model_config = ConfigDict(extra="ignore")
    path: str
    reason: str


class RunInfo(BaseModel):
    """What the report's header says about the run."""

    run_id: int | None = None
    date: str = ""
    engine_version: str = ""
    model: str = ""
    host: str = ""
    chaos_kills: int | None = None  # workers SIGKILLed by --chaos before the report was written

    @classmethod
    def now(cls, run_id: int | None = None, model: str = "", chaos_kills: int | None = None) -> RunInfo:
        """The header for a report written now on this host."""
        try:
            version = metadata.version("pgflight")
        except metadata.PackageNotFoundError:
            version = "unknown"
        return cls(
            run_id=run_id,
            date=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            engine_version=version,
            model=model,
            host=socket.gethostname(),
            chaos_kills=chaos_kills,
        )


@dataclass(frozen=True)
class ReportFiles:
    """Paths of the written files: the index pages, the CSV, and the pages of a paged report."""

    markdown: Path
    html: Path
    csv: Path
    pages: tuple[Path, ...] = ()


def citation(path: str, line_start: int, line_end: int) -> str:
    """:return: ``path:12`` or ``path:12-15``."""
    return f"{path}:{line_start}" if line_start == line_end else f"{path}:{line_start}-{line_end}"


def line_link(path: str, quote: str) -> str:
    """
    A link that opens the document at the quoted text: ``file://`` with a text fragment
    (``#:~:text=``), which browsers scroll to and highlight.
    """
    words = quote.split()
    fragment = f"#:~:text={urllib.parse.quote(' '.join(words[:5]), safe='')}" if words else ""
    return "file://" + urllib.parse.quote(path) + fragment


# --- the report as data ------------------------------------------------------------------------


@dataclass
class Finding:
    """One finding as shown: the flag plus its anchor, citation and link."""

    anchor: str
    category: str
    title: str
    severity: str
    family: str
    lines: str  # "12" or "12-15"
    text: str  # the whole sentences, else the quote
    link: str
    same_as: str | None = None  # anchor of the first finding with this wording (text shown there)
    same_doc: Document | None = None  # the document that finding is in


@dataclass
class Document:
    anchor: str
    path: str
    family: str
    family_source: str
    also: list[str]
    summary: str
    step_id: int | None
    findings: list[Finding] = field(default_factory=list)  # high and medium, high first
    low: list[Finding] = field(default_factory=list)  # low severity, not routine: folded
    routine: list[Finding] = field(default_factory=list)  # warranty, liability: folded, links only
    page: str | None = None  # the page it is shown on (under pages/), None: on the index

    @property
    def severities(self) -> str:
        return " ".join(sorted({f.severity for f in self.all}))

    @property
    def categories(self) -> str:
        return " ".join(sorted({f.category for f in self.all}))

    @property
    def all(self) -> list[Finding]:
        return self.findings + self.low + self.routine

    @property
    def link(self) -> str:
        return "file://" + urllib.parse.quote(self.path)

    @property
    def folded_lines(self) -> list[tuple[str, str, str, str]]:
        """Low-severity and routine findings as (category, title, severity, "12-15, 40"): folded to
        one line per category, without quotes (the document holds them)."""
        by: dict[str, list[Finding]] = {}
        for f in self.low + self.routine:
            by.setdefault(f.category, []).append(f)
        return [(c, fs[0].title, fs[0].severity, ", ".join(f.lines for f in fs)) for c, fs in by.items()]

    @property
    def folded(self) -> str:
        """What the folded part holds, for its summary line: "2 attribution, 3 routine"."""
        parts = [
            f"{len(self.low)} low" if self.low else "",
            f"{len(self.routine)} routine" if self.routine else "",
        ]
        return ", ".join(p for p in parts if p)

    @property
    def high(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "high"]

    @property
    def system_copyleft(self) -> bool:
        """
        The copyright notice of a distribution package whose only high-severity clauses are
        copyleft: ordinary for an operating system's own packages (GPL and its kin cover most of
        them), counted apart from the documents that need a lawyer's look.
        """
        return (
            self.path.startswith(SYSTEM_NOTICE_PREFIXES)
            and bool(self.high)
            and all(f.category in COPYLEFT_CATEGORIES for f in self.high)
        )

    @property
    def needs_review(self) -> bool:
        return bool(self.high) and not self.system_copyleft


@dataclass
class Page:
    """
    One page of a paged report, under ``pages/`` (HTML and Markdown alike): a range of one
    family's documents, or a range of a list (a reason's documents, not reviewed, skipped).
    """

    name: str  # file name without its suffix
    title: str
    kind: str  # family, reason, not-reviewed, skipped
    number: int
    of: int
    siblings: list[str]  # the names of every page of its series, in order
    documents: list[Document] = field(default_factory=list)  # family pages
    entries: list[Any] = field(default_factory=list)  # list pages
    family: Family | None = None

    @property
    def prev(self) -> str | None:
        return self.siblings[self.number - 2] if self.number > 1 else None

    @property
    def next(self) -> str | None:
        return self.siblings[self.number] if self.number < self.of else None


@dataclass
class Family:
    name: str
    anchor: str
    documents: list[Document]
    pages: list[Page] = field(default_factory=list)

    @property
    def high(self) -> int:
        return sum(len(d.high) for d in self.documents)

    @property
    def findings(self) -> int:
        return sum(len(d.all) for d in self.documents)


@dataclass
class Reason:
    """Documents needing a lawyer's look for one high-severity category."""

    category: str
    title: str
    documents: list[tuple[Document, list[Finding]]]
    pages: list[Page] = field(default_factory=list)  # all of them, when the index shows the first few

    @property
    def shown(self) -> list[tuple[Document, list[Finding]]]:
        """The documents the index lists: all, or the first `INDEX_ROWS` when the rest is paged."""
        return self.documents[:INDEX_ROWS] if self.pages else self.documents


@dataclass
class Report:
    title: str
    run: RunInfo
    submitted: int
    reviewed: int
    findings: int
    by_severity: dict[str, int]
    by_category: list[tuple[str, str, int, int, bool]]  # category, title, findings, documents, routine
    reasons: list[Reason]
    needs_review: int  # documents with a high-severity finding, system packages' copyleft aside
    system_copyleft: int  # system packages' notices whose only high-severity clauses are copyleft
    families: list[Family]
    not_reviewed: list[DocumentResult]
    skipped: list[SkippedRecord]
    audit: list[tuple[str, str]]
    categories: list[tuple[str, str]]
    unreliable: str = ""  # what the model cannot judge reliably (the offline model), else empty
    paged: bool = False  # documents on pages of their own (pages/), the index lists and links
    not_reviewed_pages: list[Page] = field(default_factory=list)
    skipped_pages: list[Page] = field(default_factory=list)

    @property
    def not_reviewed_shown(self) -> list[DocumentResult]:
        return self.not_reviewed[:INDEX_ROWS] if self.not_reviewed_pages else self.not_reviewed

    @property
    def skipped_shown(self) -> list[SkippedRecord]:
        return self.skipped[:INDEX_ROWS] if self.skipped_pages else self.skipped

    @property
    def pages(self) -> list[Page]:
        """Every page under pages/: families' pages, then the lists'."""
        return [
            *(p for f in self.families for p in f.pages),
            *(p for r in self.reasons for p in r.pages),
            *self.not_reviewed_pages,
            *self.skipped_pages,
        ]


def _anchor(prefix: str, text: str) -> str:
    return prefix + "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")[:60]


def _finding(doc_anchor: str, i: int, r: DocumentResult, f: FlagRecord) -> Finding:
    start = f.context_start or f.line_start
    end = f.context_end or f.line_end
    text = f.context or f.quote
    return Finding(
        anchor=f"{doc_anchor}-{i}",
        category=f.category,
        title=CATEGORY_TITLES.get(f.category, f.category),
        severity=f.severity,
        family=f.family or r.family or UNKNOWN_FAMILY,
        lines=str(start) if start == end else f"{start}-{end}",
        text=text,
        link=line_link(r.path, f.quote),
    )


#: Characters of a repeated wording shown again; the whole text is at its first occurrence.
REPEAT_CHARS: Final = 90


def _share_wordings(docs: list[Document]) -> None:
    """A wording already shown (the same GPL notice in 300 copyright files) is shortened to its
    start and a link to where it is shown in full: the report stays small and readable."""
    first: dict[str, tuple[str, Document]] = {}
    for d in docs:
        for f in d.findings:
            key = f"{f.category}|{f.text}"
            if key in first and len(f.text) > REPEAT_CHARS:
                f.same_as, f.same_doc = first[key]
                f.text = f.text[:REPEAT_CHARS].rsplit(" ", 1)[0] + " …"
            else:
                first.setdefault(key, (f.anchor, d))


_SEVERITY_ORDER: Final = {s: i for i, s in enumerate(SEVERITIES)}
#: Where a Debian or Ubuntu system keeps its packages' copyright notices and common licence texts.
SYSTEM_NOTICE_PREFIXES: Final = ("/usr/share/doc/", "/usr/share/common-licenses/")
COPYLEFT_CATEGORIES: Final = frozenset({"strong_copyleft", "network_copyleft"})


def build(
    results: list[DocumentResult],
    skipped: list[SkippedRecord],
    audit: Mapping[str, Any],
    run: RunInfo,
    title: str,
) -> Report:
    """The report's content: summary, families, documents, audit (the templates only lay it out)."""
    reviewed = sorted((r for r in results if r.status == "succeeded"), key=lambda r: r.path)
    docs: list[Document] = []
    for n, r in enumerate(reviewed, start=1):
        anchor = f"d{n}"
        doc = Document(
            anchor=anchor,
            path=r.path,
            family=r.family or UNKNOWN_FAMILY,
            family_source=r.family_source or "text",
            also=[f for f in r.families if f != r.family],
            summary=r.summary,
            step_id=r.step_id,
        )
        ordered = sorted(r.flags, key=lambda f: (_SEVERITY_ORDER.get(f.severity, 9), f.line_start))
        for i, f in enumerate(ordered, start=1):
            shown = _finding(anchor, i, r, f)
            if f.category in ROUTINE_CATEGORIES:
                doc.routine.append(shown)
            else:
                (doc.low if f.severity == "low" else doc.findings).append(shown)
        docs.append(doc)
    flags = [f for d in docs for f in d.all]
    _share_wordings(docs)
    reasons = [
        Reason(
            c,
            CATEGORY_TITLES.get(c, c),
            [
                (d, [f for f in d.high if f.category == c])
                for d in docs
                if d.needs_review and any(f.category == c for f in d.high)
            ],
        )
        for c in CATEGORIES
        if c in HIGH_CATEGORIES
    ]
    families: dict[str, list[Document]] = {}
    for d in docs:
        families.setdefault(d.family, []).append(d)
    family_list = [
        Family(name, _anchor("f-", name), ds)
        for name, ds in sorted(
            families.items(), key=lambda kv: (-sum(len(d.high) for d in kv[1]), -len(kv[1]), kv[0])
        )
    ]
    keys = [*(k for k in AUDIT_LABELS if k in audit), *(k for k in audit if k not in AUDIT_LABELS)]
    audit_rows = [(AUDIT_LABELS.get(k, k), _fmt(k, audit[k])) for k in keys]
    if run.chaos_kills is not None:
        audit_rows.append(
            ("Workers killed by --chaos (SIGKILL) before the report", fmt.number(run.chaos_kills))
        )
    return Report(
        title=title,
        run=run,
        submitted=len(results),
        reviewed=len(reviewed),
        findings=len(flags),
        by_severity={s: sum(1 for f in flags if f.severity == s) for s in SEVERITIES},
        by_category=[
            (
                c,
                CATEGORY_TITLES.get(c, c),
                sum(1 for f in flags if f.category == c),
                sum(1 for d in docs if any(f.category == c for f in d.all)),
                c in ROUTINE_CATEGORIES,
            )
            for c in CATEGORIES
        ],
        reasons=[r for r in reasons if r.documents],
        needs_review=sum(1 for d in docs if d.needs_review),
        system_copyleft=sum(1 for d in docs if d.system_copyleft),
        families=family_list,
        not_reviewed=[r for r in results if r.status != "succeeded"],
        skipped=skipped,
        audit=audit_rows,
        categories=[(c, CATEGORY_TITLES.get(c, c)) for c in CATEGORIES],
        unreliable=unreliable_note(run.model),
    )


def _fmt(key: str, value: Any) -> str:
    """
    An audit figure as the CLI prints it: USD by :func:`fmt.money`, seconds by :func:`fmt.duration`,
    counts grouped by thousands.
    """
    if key == "usd" or key.endswith("_usd"):
        return fmt.money(value)
    if key.endswith("_s") and isinstance(value, int | float):
        return fmt.duration(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return fmt.number(value)
    if isinstance(value, float):
        return f"{value:,.6f}".rstrip("0").rstrip(".") if value else "0"
    return str(value)


# --- renderers --------------------------------------------------------------------------------


# Markdown: text from the documents (file names, licence families, clause text, errors) is data,
# never markup. In running text each character Markdown or HTML would act on is escaped; a file
# name shown as code gets a backtick fence longer than any run of backticks in it.

# backslash-escaped: code spans, emphasis, links and images, table cells, strikethrough
_MD_ESCAPED: Final = frozenset("\\`*_[]|~")
# as entities: raw HTML and autolinks need < and >; & so that no entity in the text is decoded
_MD_ENTITIES: Final = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}
_MD_SPECIAL: Final = re.compile("[" + re.escape("".join(sorted(_MD_ESCAPED | set(_MD_ENTITIES)))) + "]")
_MD_ORDERED: Final = re.compile(r"(\d{1,9})[.)](?: |$)")


def _md_cell(text: Any) -> str:
    """
    `text` as one line of literal Markdown text (a table cell, a heading, a list item, a
    paragraph's start): whitespace, newlines included, collapsed to single spaces; HTML's ``< > &``
    as entities; backslash, backticks, brackets, emphasis (not an underscore inside a word), ``|``
    and ``~`` backslash-escaped; a leading character that would start a block (``#``, ``-``,
    ``+``, ``=``, ``1. ``) escaped too.
    A CommonMark renderer shows it as the text it was, with no element of its own.

    :return: the escaped text; a single space for empty text (an empty table cell).
    """
    one_line = " ".join(str(text).split())

    def escaped(m: re.Match[str]) -> str:
        c = m.group()
        return _MD_ENTITIES.get(c) or (c if _intraword(one_line, m.start()) else "\\" + c)

    out = _MD_SPECIAL.sub(escaped, one_line)
    if out[:1] in ("#", "-", "+", "="):
        out = "\\" + out
    elif marker := _MD_ORDERED.match(out):  # "1. " or "1) " would start an ordered list
        out = out[: marker.end(1)] + "\\" + out[marker.end(1) :]
    return out or " "


def _intraword(text: str, i: int) -> bool:
    """An underscore between two letters or digits (``dead_letter``): CommonMark reads no emphasis there."""
    return text[i] == "_" and 0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()


def _visible(c: str) -> str:
    """A control or line-breaking character as a visible escape (``\\n``); others as they are."""
    if c == "\n":
        return "\\n"
    if c == "\r":
        return "\\r"
    if c == "\t":
        return "\\t"
    if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c in "\u2028\u2029":
        return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"
    return c


def _md_code(text: Any) -> str:
    """
    `text` (a file name) as a Markdown code span: control characters and line breaks shown as
    escapes (``\\n``), so the span stays on its line; fenced with one backtick more than its
    longest run of backticks (padded with a space when it starts or ends with one), so no
    backtick in it ends the span. Inside a code span a renderer escapes HTML and reads no
    brackets or emphasis.
    """
    body = "".join(_visible(c) for c in str(text))
    longest = run = 0
    for c in body:
        run = run + 1 if c == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    if body[:1] in ("`", " ") or body[-1:] in ("`", " "):
        body = f" {body} "
    return f"{fence}{body}{fence}"


@functools.lru_cache(maxsize=2)
def _environment(autoescape: bool) -> Any:
    import jinja2  # here, not at the top: only the reconcile step renders (workers start faster)

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=autoescape,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    env.filters["md"] = _md_cell
    env.filters["code"] = _md_code
    env.filters["num"] = fmt.number  # '7,470', as the CLI prints counts
    env.filters["count"] = fmt.count  # '1 document', '7,470 findings'
    return env


def _linker(here: str | None, suffix: str) -> Any:
    """
    The templates' ``link(page, anchor)``: a relative link from page `here` (None: the index,
    ``report.html``; else a page under ``pages/``) to `anchor` on `page` (None: the index).
    """

    def link(page: str | None, anchor: str) -> str:
        fragment = f"#{anchor}" if anchor else ""
        if page == here:
            return fragment or f"{page or 'report'}{suffix}"
        if page is None:
            return f"../report{suffix}{fragment}"
        if here is None:
            return f"{PAGES_DIR}/{page}{suffix}{fragment}"
        return f"{page}{suffix}{fragment}"

    return link


def render_html(rep: Report) -> str:
    """The index (``report.html``): everything when the report is not paged."""
    return str(
        _environment(True)
        .get_template("report.html.j2")
        .render(r=rep, title=rep.title, link=_linker(None, ".html"), filters=not rep.paged)
    )


def render_markdown(rep: Report) -> str:
    """The index (``report.md``): everything when the report is not paged."""
    return str(_environment(False).get_template("report.md.j2").render(r=rep, link=_linker(None, ".md")))


def render_page_html(rep: Report, page: Page) -> str:
    """One page under ``pages/``."""
    return str(
        _environment(True)
        .get_template("page.html.j2")
        .render(
            r=rep,
            p=page,
            title=f"{page.title} · {rep.title}",
            link=_linker(page.name, ".html"),
            filters=page.kind == "family",
        )
    )


def render_page_markdown(rep: Report, page: Page) -> str:
    return str(
        _environment(False).get_template("page.md.j2").render(r=rep, p=page, link=_linker(page.name, ".md"))
    )


# --- paging ---------------------------------------------------------------------------------------

#: The folder of a paged report's pages, beside report.html.
PAGES_DIR: Final = "pages"
#: Bytes of documents' HTML a page holds at most (a single larger document gets a page of its own).
PAGE_BYTES: Final = 200_000
#: A report whose documents and lists weigh more than this is paged; a lighter one is one page.
SINGLE_PAGE_BYTES: Final = 200_000
#: Rows of a list (a reason's documents, not reviewed, skipped) the index of a paged report shows.
INDEX_ROWS: Final = 25
#: Rows of a list per page.
LIST_ROWS: Final = 500
#: Bytes a list's row weighs about, to decide whether a report fits on one page.
ROW_BYTES: Final = 250


def _series(prefix: str, title: str, kind: str, chunks: list[list[Any]], **extra: Any) -> list[Page]:
    names = [f"{prefix}-{i}" for i in range(1, len(chunks) + 1)]
    pages = []
    for i, chunk in enumerate(chunks, start=1):
        page = Page(names[i - 1], title, kind, i, len(chunks), names, **extra)
        if kind == "family":
            page.documents = chunk
        else:
            page.entries = chunk
        pages.append(page)
    return pages


def _rows(items: list[Any], n: int) -> list[list[Any]]:
    return [items[i : i + n] for i in range(0, len(items), n)]


def paginate(rep: Report, weights: Mapping[str, int]) -> None:
    """
    Page the report when it is too heavy for one page: each family's documents on pages of at most
    `PAGE_BYTES` (by `weights`, the rendered bytes of each document by anchor), and each list longer
    than `INDEX_ROWS` on pages of `LIST_ROWS` rows, the index showing its first rows. Sets
    ``rep.paged``, the pages, and each document's ``page``.
    """
    rows = sum(len(r.documents) for r in rep.reasons) + len(rep.not_reviewed) + len(rep.skipped)
    if sum(weights.values()) + rows * ROW_BYTES <= SINGLE_PAGE_BYTES:
        return
    rep.paged = True
    for n, fam in enumerate(rep.families, start=1):
        chunks: list[list[Document]] = [[]]
        size = 0
        for d in fam.documents:
            w = weights.get(d.anchor, 0)
            if chunks[-1] and size + w > PAGE_BYTES:
                chunks.append([])
                size = 0
            chunks[-1].append(d)
            size += w
        fam.pages = _series(
            f"f{n}-{fam.anchor.removeprefix('f-')[:40]}", fam.name, "family", chunks, family=fam
        )
        for page in fam.pages:
            for d in page.documents:
                d.page = page.name
    for reason in rep.reasons:
        if len(reason.documents) > INDEX_ROWS:
            title = f"Needs a lawyer's look: {reason.title}"
            reason.pages = _series(
                f"r-{reason.category}", title, "reason", _rows(reason.documents, LIST_ROWS)
            )
    if len(rep.not_reviewed) > INDEX_ROWS:
        rep.not_reviewed_pages = _series(
            "not-reviewed", "Not reviewed", "not-reviewed", _rows(rep.not_reviewed, LIST_ROWS)
        )
    if len(rep.skipped) > INDEX_ROWS:
        rep.skipped_pages = _series(
            "skipped", "Skipped before review", "skipped", _rows(rep.skipped, LIST_ROWS)
        )


def document_weights(rep: Report) -> dict[str, int]:
    """The bytes of each document's HTML (as the index would show it), by anchor."""
    template = _environment(True).get_template("_doc.html.j2")
    link = _linker(None, ".html")
    return {
        d.anchor: len(template.render(d=d, link=link).encode()) for fam in rep.families for d in fam.documents
    }


#: First characters that make a spreadsheet read a cell as a formula (or a DDE call): a cell of
#: text starting with one is written with a single quote before it (OWASP, CSV injection).
CSV_FORMULA_STARTS: Final = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """
    A CSV cell a spreadsheet shows as text: a string that starts with ``= + - @``, a tab or a
    carriage return gets a single quote in front; other values (numbers) as they are.
    """
    if isinstance(value, str) and value.startswith(CSV_FORMULA_STARTS):
        return "'" + value
    return value


def _write_csv(path: Path, results: list[DocumentResult]) -> None:
    """flags.csv: one row per flag, every text cell neutralised (:func:`csv_cell`)."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(CSV_COLUMNS)
        for r in sorted(results, key=lambda r: r.path):
            if r.status != "succeeded":
                continue
            for f in sorted(r.flags, key=lambda f: (f.line_start, f.line_end, f.category)):
                writer.writerow(
                    csv_cell(v)
                    for v in (
                        r.path,
                        f.family or r.family or UNKNOWN_FAMILY,
                        f.category,
                        f.severity,
                        f.line_start,
                        f.line_end,
                        citation(r.path, f.line_start, f.line_end),
                        f.quote,
                    )
                )


def write_report(
    out_dir: str | os.PathLike[str],
    results: Sequence[DocumentResult | Mapping[str, Any]],
    audit: Mapping[str, Any],
    skipped: Sequence[SkippedRecord | Mapping[str, Any] | Any] = (),
    *,
    run: RunInfo | None = None,
    title: str = "pgflight licence review",
) -> ReportFiles:
    """
    Write ``report.md``, ``report.html`` and ``flags.csv`` into `out_dir` (created if missing).

    :param results: one per submitted document: `DocumentResult` or a dict with its fields
        (path, family, families, flags [category, severity, quote, line_start, line_end, family,
        context...], summary, status, error, step_id).
    :param audit: figures queried from the database (steps, attempts, retries,
        reclaimed_attempts, stale_writes_rejected, dead_letters, model_calls, tokens, usd, ...),
        written as given.
    :param skipped: documents discovery did not submit: `SkippedRecord`, a dict, or any object
        with ``path`` and ``reason`` attributes (e.g. `discovery.Skipped`).
    :param run: the header (run id, date, version, model, host, chaos kills); default: now, here.
    :return: the paths written.
    """
    docs = [r if isinstance(r, DocumentResult) else DocumentResult.model_validate(r) for r in results]
    skips = [
        s
        if isinstance(s, SkippedRecord)
        else SkippedRecord.model_validate(s)
        if isinstance(s, Mapping)
        else SkippedRecord(path=str(s.path), reason=str(s.reason))
        for s in skipped
    ]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rep = build(docs, skips, audit, run or RunInfo.now(), title)
    paginate(rep, document_weights(rep))
    pages_dir = out / PAGES_DIR
    for old in [*pages_dir.glob("*.html"), *pages_dir.glob("*.md")]:  # a previous report's pages
        old.unlink()
    written: list[Path] = []
    if rep.pages:
        pages_dir.mkdir(exist_ok=True)
    for page in rep.pages:
        for suffix, render in ((".html", render_page_html), (".md", render_page_markdown)):
            path = pages_dir / f"{page.name}{suffix}"
            path.write_text(render(rep, page), encoding="utf-8")
            written.append(path)
    files = ReportFiles(out / "report.md", out / "report.html", out / "flags.csv", tuple(written))
    files.markdown.write_text(render_markdown(rep), encoding="utf-8")
    files.html.write_text(render_html(rep), encoding="utf-8")
    _write_csv(files.csv, docs)
    return files
