"""
What `pgflight review` prints and writes for people: each plain progress line once, every count
grouped by thousands (the summary lines, the report's cards, tables and audit), USD and times as
the CLI writes them (pgflight.fmt), and a skipped file's size readable.
"""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path
from typing import Any

from test_review_units import TEST_RUN, report_results

from pgflight import fmt
from pgflight.db.audit import RunAudit
from pgflight_review import discovery, report
from pgflight_review.job import Outcome, PlainLines, summary_lines


def test_a_plain_progress_line_is_printed_once_even_when_the_run_ends_right_after_it() -> None:
    lines = PlainLines(every_s=10.0)
    assert lines.due(0.0, (0, 2, 0, 0, 0), ended=False)  # the first line at once
    assert not lines.due(4.0, (300, 2, 0, 0, 0), ended=False)  # then every 10 s
    assert lines.due(10.0, (893, 2, 0, 0, 0), ended=False)  # the last documents are done ...
    assert not lines.due(10.6, (893, 2, 0, 0, 0), ended=True)  # ... the run ends: nothing new to say
    assert not lines.due(25.0, (893, 2, 0, 0, 0), ended=False)  # nor every 10 s while nothing moves
    # a run that ends with figures the last line did not have gets its final line at once
    other = PlainLines(every_s=10.0)
    assert other.due(0.0, (0, 2, 0, 0, 0), ended=False)
    assert other.due(3.0, (893, 2, 1, 1, 1), ended=True)


def _audit(**figures: Any) -> RunAudit:
    base: dict[str, Any] = dict.fromkeys(RunAudit.model_fields, 0)
    return RunAudit.model_validate(
        base | {"status": "succeeded", "usd": Decimal(0), "wall_time_s": 1.0} | figures
    )


def test_the_summary_lines_group_every_count() -> None:
    result = {"html": "/o/report.html", "documents": 12345, "reviewed": 12340, "not_reviewed": 5}
    result |= {"skipped": 1004, "findings": 7470, "pages": 2468}  # 1,234 pages, each in HTML and Markdown
    audit = _audit(steps=12347, attempts=12400, model_calls=4222, tokens=20928662, usd=Decimal("0.0012"))
    out = summary_lines(
        Outcome(
            run_id=1,
            status="succeeded",
            result=result,
            error=None,
            audit=audit,
            documents=12345,
            skipped=1004,
            wall_s=70.0,
            kills=0,
            resumed=False,
        )
    )
    text = "\n".join(out)
    assert (
        "documents: 12,345 submitted, 12,340 reviewed, 5 not reviewed, 1,004 skipped; 7,470 findings" in text
    )
    assert "12,347 steps" in text and "4,222 model calls" in text and "20,928,662 tokens" in text
    assert fmt.money(Decimal("0.0012")) == "$0.0012" and "$0.0012" in text
    assert "(12,347.0/s)" in text  # wall time 1 s
    assert "(also report.md, flags.csv; 1,234 pages in pages/)" in text
    assert not re.search(r"(?<![\d.,])\d{4,}", text.replace("/o/report.html", "")), text  # no ungrouped count


def test_the_report_groups_its_counts_and_writes_usd_and_times_as_the_cli(tmp_path: Path) -> None:
    results = report_results()
    many = [
        {
            "category": "attribution",
            "severity": "medium",
            "quote": f"notice {i}",
            "line_start": i,
            "line_end": i,
        }
        for i in range(1, 1201)
    ]
    results.append(
        {"path": "/srv/many.txt", "family": "MIT", "flags": many, "summary": "many", "step_id": 90}
    )
    audit = {"steps": 1203, "model_calls": 4222, "tokens": 20928662, "usd": 0.0012, "wall_time_s": 68.2}
    files = report.write_report(tmp_path / "out", results, audit, [], run=TEST_RUN)
    md = files.markdown.read_text(encoding="utf-8")
    page = files.html.read_text(encoding="utf-8")
    reviewed = [r for r in results if r.get("status", "succeeded") == "succeeded"]
    findings = sum(len(r.get("flags", [])) for r in reviewed)
    assert findings > 1000
    assert f"; {findings:,} findings (" in md
    medium = sum(1 for r in reviewed for f in r["flags"] if f["severity"] == "medium")
    assert f"<b>{medium:,}</b>" in page  # the medium card
    # 1,200 findings weigh more than a page: the index lists the families, each on pages of its own
    assert re.search(
        r'<a href="pages/f\d+-mit-1.html">MIT</a></td><td class="n">1</td><td class="n">1,200</td>', page
    )
    mit = next(p for p in files.pages if re.search(r"f\d+-mit-1.html$", str(p))).read_text(encoding="utf-8")
    assert "1 document under this licence, 1,200 findings" in mit
    assert re.search(r"<td>Attribution or notice duty</td><td class=\"n\">1,2\d\d</td>", page)
    for label, shown in [
        ("Steps", "1,203"),
        ("Model calls", "4,222"),
        ("Tokens", "20,928,662"),
        ("Cost", "$0.0012"),
        ("Wall time", "1 min 08 s"),
    ]:
        assert f"| {label} | {shown} |" in md
        assert f'<tr><td>{label}</td><td class="n">{shown}</td></tr>' in page


def test_a_file_over_the_size_cap_is_skipped_with_its_size_readable(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_bytes(b"a" * (discovery.MAX_BYTES + 1))
    found = discovery.discover([str(big)])
    assert [s.reason for s in found.skipped] == [
        f"huge: {discovery.MAX_BYTES + 1:,} bytes, over the {discovery.MAX_BYTES:,}-byte cap"
    ]
    assert found.skipped[0].reason == "huge: 2,000,001 bytes, over the 2,000,000-byte cap"
