"""
The review's report: ``report.md``, ``report.html`` and ``flags.csv``.

`write_report` takes the per-document results (as the reconcile step collects them from the
children's outputs), the skipped documents, and an audit dict queried from the database by the
caller; it computes nothing about the run itself. Both documents are rendered from one list of
blocks (headings, paragraphs, tables), so the Markdown and the HTML always say the same thing;
the HTML is self-contained (inline CSS) and every value in it is escaped.
"""

from __future__ import annotations

import csv
import html
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict

from pgflight_review.clauses import CATEGORIES, CATEGORY_TITLES, SEVERITIES, UNKNOWN_FAMILY

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
    "usd": "Cost (USD)",
    "wall_time_s": "Wall time (s)",
    "steps_succeeded_twice": "Steps with more than one succeeded attempt (0 unless replayed)",
}
CSV_COLUMNS: Final = ("path", "family", "category", "severity", "line_start", "line_end", "citation", "quote")


class FlagRecord(BaseModel):
    """One accepted `flag` call."""

    model_config = ConfigDict(extra="ignore")
    category: str
    severity: str
    quote: str
    line_start: int
    line_end: int


class DocumentResult(BaseModel):
    """
    One document's review outcome.

    :ivar status: the child step's status (``succeeded``, ``dead_letter``, ``failed``, ...).
    :ivar family: primary license family, ``unknown`` (or None) when not classified.
    :ivar error: why the review did not succeed, when it did not.
    """

    model_config = ConfigDict(extra="ignore")
    path: str
    family: str | None = None
    families: list[str] = []
    flags: list[FlagRecord] = []
    summary: str = ""
    status: str = "succeeded"
    error: str | None = None


class SkippedRecord(BaseModel):
    """A document discovery did not submit, and why."""

    model_config = ConfigDict(extra="ignore")
    path: str
    reason: str


@dataclass(frozen=True)
class ReportFiles:
    """Paths of the three written files."""

    markdown: Path
    html: Path
    csv: Path


def citation(path: str, line_start: int, line_end: int) -> str:
    """:return: ``path:12`` or ``path:12-15``."""
    return f"{path}:{line_start}" if line_start == line_end else f"{path}:{line_start}-{line_end}"


# --- the report as blocks ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Heading:
    level: int
    text: str


@dataclass(frozen=True)
class _Para:
    text: str


@dataclass(frozen=True)
class _Table:
    columns: tuple[str, ...]
    rows: list[tuple[str, ...]]


_Block = _Heading | _Para | _Table


def _classified(r: DocumentResult) -> bool:
    return r.status == "succeeded" and bool(r.family) and r.family != UNKNOWN_FAMILY


def _blocks(
    results: list[DocumentResult], skipped: list[SkippedRecord], audit: Mapping[str, Any], title: str
) -> list[_Block]:
    reviewed = [r for r in results if r.status == "succeeded"]
    flags = [(r, f) for r in reviewed for f in r.flags]
    blocks: list[_Block] = [
        _Heading(1, title),
        _Para(
            f"{len(results)} documents submitted, {len(reviewed)} reviewed, "
            f"{len(results) - len(reviewed)} not reviewed, {len(skipped)} skipped before review; "
            f"{len(flags)} findings."
        ),
        _Heading(2, "Findings by category"),
        _Table(
            ("Category", "Findings", *(s.capitalize() for s in SEVERITIES), "Documents"),
            [
                (
                    CATEGORY_TITLES.get(c, c),
                    str(sum(1 for _, f in flags if f.category == c)),
                    *(
                        str(sum(1 for _, f in flags if f.category == c and f.severity == s))
                        for s in SEVERITIES
                    ),
                    str(len({r.path for r, f in flags if f.category == c})),
                )
                for c in [*CATEGORIES, *sorted({f.category for _, f in flags} - set(CATEGORIES))]
            ],
        ),
    ]
    families: dict[str, list[DocumentResult]] = {}
    for r in reviewed:
        families.setdefault(r.family or UNKNOWN_FAMILY, []).append(r)
    blocks += [
        _Heading(2, "Documents by license family"),
        _Table(
            ("Family", "Documents", "Findings", "High"),
            [
                (
                    fam,
                    str(len(docs)),
                    str(sum(len(d.flags) for d in docs)),
                    str(sum(1 for d in docs for f in d.flags if f.severity == "high")),
                )
                for fam, docs in sorted(families.items(), key=lambda kv: (-len(kv[1]), kv[0]))
            ],
        ),
        _Heading(2, "Documents that could not be classified"),
    ]
    unclassified = [r for r in reviewed if not _classified(r)]
    blocks.append(
        _Table(
            ("Document", "Findings", "Summary"),
            [(r.path, str(len(r.flags)), r.summary) for r in unclassified],
        )
        if unclassified
        else _Para("None: every reviewed document was given a license family.")
    )
    not_reviewed = [r for r in results if r.status != "succeeded"]
    blocks.append(_Heading(2, "Documents not reviewed"))
    blocks.append(
        _Table(("Document", "Status", "Error"), [(r.path, r.status, r.error or "") for r in not_reviewed])
        if not_reviewed
        else _Para("None.")
    )
    blocks.append(_Heading(2, "Skipped documents"))
    blocks.append(
        _Table(("Document", "Reason"), [(s.path, s.reason) for s in skipped]) if skipped else _Para("None.")
    )
    blocks.append(_Heading(2, "Audit (from the database)"))
    keys = [*(k for k in AUDIT_LABELS if k in audit), *(k for k in audit if k not in AUDIT_LABELS)]
    blocks.append(
        _Table(("Measure", "Value"), [(AUDIT_LABELS.get(k, k), _fmt(audit[k])) for k in keys])
        if keys
        else _Para("No audit data.")
    )
    blocks.append(_Heading(2, "Findings per document"))
    for r in sorted(reviewed, key=lambda r: r.path):
        blocks.append(_Heading(3, r.path))
        blocks.append(
            _Para(
                f"Family: {r.family or UNKNOWN_FAMILY}"
                + (f" (also {', '.join(r.families[1:])})" if len(r.families) > 1 else "")
                + (f". {r.summary}" if r.summary else "")
            )
        )
        if r.flags:
            blocks.append(
                _Table(
                    ("Severity", "Category", "Citation", "Quote"),
                    [
                        (
                            f.severity,
                            CATEGORY_TITLES.get(f.category, f.category),
                            citation(r.path, f.line_start, f.line_end),
                            f.quote,
                        )
                        for f in sorted(r.flags, key=lambda f: (f.line_start, f.line_end, f.category))
                    ],
                )
            )
    return blocks


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6f}".rstrip("0").rstrip(".") if value else "0"
    return str(value)


# --- renderers --------------------------------------------------------------------------------


def _md_cell(text: str) -> str:
    return " ".join(text.split()).replace("\\", "\\\\").replace("|", "\\|") or " "


def _markdown(blocks: list[_Block]) -> str:
    out: list[str] = []
    for b in blocks:
        if isinstance(b, _Heading):
            out.append(f"{'#' * b.level} {_md_cell(b.text)}\n")
        elif isinstance(b, _Para):
            out.append(f"{b.text}\n")
        else:
            out.append("| " + " | ".join(b.columns) + " |")
            out.append("|" + "|".join("---" for _ in b.columns) + "|")
            out.extend("| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b.rows)
            out.append("")
    return "\n".join(out)


_CSS: Final = (
    "body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}"
    "table{border-collapse:collapse;margin:0.5em 0 1.5em}"
    "th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}"
    "th{background:#f0f0f0}td{font-size:0.92em}h3{font-family:monospace;font-size:1em;margin-top:1.5em}"
)


def _html(blocks: list[_Block], title: str) -> str:
    e = html.escape
    out = [
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>'
        f"<style>{_CSS}</style></head><body>"
    ]
    for b in blocks:
        if isinstance(b, _Heading):
            out.append(f"<h{b.level}>{e(b.text)}</h{b.level}>")
        elif isinstance(b, _Para):
            out.append(f"<p>{e(b.text)}</p>")
        else:
            out.append(
                "<table><thead><tr>" + "".join(f"<th>{e(c)}</th>" for c in b.columns) + "</tr></thead><tbody>"
            )
            out.extend("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in b.rows)
            out.append("</tbody></table>")
    out.append("</body></html>\n")
    return "\n".join(out)


def _write_csv(path: Path, results: list[DocumentResult]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(CSV_COLUMNS)
        for r in sorted(results, key=lambda r: r.path):
            if r.status != "succeeded":
                continue
            for f in sorted(r.flags, key=lambda f: (f.line_start, f.line_end, f.category)):
                writer.writerow(
                    (
                        r.path,
                        r.family or UNKNOWN_FAMILY,
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
    title: str = "pgflight legal document review",
) -> ReportFiles:
    """
    Write ``report.md``, ``report.html`` and ``flags.csv`` into `out_dir` (created if missing).

    :param results: one per submitted document: `DocumentResult` or a dict with its fields
        (path, family, families, flags [category, severity, quote, line_start, line_end], summary,
        status, error).
    :param audit: figures queried from the database (steps, attempts, retries,
        reclaimed_attempts, stale_writes_rejected, dead_letters, model_calls, tokens, usd, ...),
        written as given.
    :param skipped: documents discovery did not submit: `SkippedRecord`, a dict, or any object
        with ``path`` and ``reason`` attributes (e.g. `discovery.Skipped`).
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
    blocks = _blocks(docs, skips, audit, title)
    files = ReportFiles(out / "report.md", out / "report.html", out / "flags.csv")
    files.markdown.write_text(_markdown(blocks), encoding="utf-8")
    files.html.write_text(_html(blocks, title), encoding="utf-8")
    _write_csv(files.csv, docs)
    return files
