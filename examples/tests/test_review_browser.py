"""
The HTML report in a real browser: headless Chromium (the system's /usr/bin/chromium, driven by
playwright; no browser download) at desktop and phone widths. The filters work without a server,
the summary comes first, nothing overflows a phone's width, and the contents' links land on their
anchors. A screenshot of each width goes to docs/ for docs/quickstart.md.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from test_review_units import TEST_RUN, report_results

from pgflight_review import report

CHROMIUM = os.environ.get("PGFLIGHT_CHROMIUM", "/usr/bin/chromium")

DOCS = Path(__file__).resolve().parents[2] / "docs"

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs the chromium apt package")


@pytest.fixture(scope="module")
def page_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("report")
    files = report.write_report(out, report_results(), {"steps": 8, "retries": 1}, [], run=TEST_RUN)
    return files.html.as_uri()


def contrast(fg: str, bg: str) -> float:
    """The WCAG contrast ratio of two computed colours ('rgb(255, 255, 255)')."""

    def lum(css: str) -> float:
        r, g, b = (int(v) / 255 for v in css[css.index("(") + 1 : css.index(")")].split(",")[:3])
        lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    hi, lo = sorted((lum(fg), lum(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def broken_cells(page: Any) -> list[str]:
    """Table headings and numbers drawn on more than one line (broken inside a word or a number)."""
    return list(
        page.eval_on_selector_all(
            "th, td.n",
            "els => els.filter(e => { const r = document.createRange(); r.selectNodeContents(e);"
            " return e.offsetParent !== null && r.getClientRects().length > 1; }).map(e => e.innerText)",
        )
    )


def visible(page: Any, selector: str) -> int:
    return int(page.eval_on_selector_all(selector, "els => els.filter(e => e.offsetParent !== null).length"))


@pytest.mark.parametrize(("name", "width", "height"), [("desktop", 1280, 900), ("phone", 390, 844)])
def test_report_reads_and_filters_in_chromium(
    browser: Any, page_url: str, name: str, width: int, height: int
) -> None:
    page = browser.new_page(viewport={"width": width, "height": height}, device_scale_factor=1)
    page.goto(page_url)
    # the header and the summary are what one sees first
    assert page.locator("h1").inner_text() == "pgflight licence review"
    assert page.locator("#summary").bounding_box()["y"] < page.locator("#families").bounding_box()["y"]
    assert "scripts/pgflight show 77" in page.locator("header").inner_text()
    # nothing wider than the screen: no sideways scrolling on a phone
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=str(DOCS / f"review-report-{name}.png"))
    # the severity badges' small white capitals are readable: WCAG AA contrast (4.5:1)
    for sev in ("high", "medium", "low"):
        fg, bg = page.eval_on_selector(
            f".sev.{sev}", "e => [getComputedStyle(e).color, getComputedStyle(e).backgroundColor]"
        )
        assert contrast(fg, bg) >= 4.5, (sev, fg, bg)

    docs = visible(page, "article.doc")
    assert docs == 4
    # filter by severity: only documents with a high finding stay, and only their high findings
    page.select_option("#sev", "high")
    assert visible(page, "article.doc") == 4  # each of the four has a high finding
    assert visible(page, "li.f[data-s=medium]") == 0 and visible(page, "li.f[data-s=high]") > 0
    page.select_option("#sev", "medium")  # the odd document has none
    assert visible(page, "article.doc") == 2 and visible(page, "li.f[data-s=high]") == 0  # GPL-3, bsdutils
    # by category and by path text
    page.select_option("#sev", "")
    page.select_option("#cat", "patent_retaliation")
    shown = page.eval_on_selector_all(
        "article.doc", "els => els.filter(e => !e.hidden).map(e => e.querySelector('h4').innerText)"
    )
    assert shown and all(p.endswith(("Apache-2.0", "GPL-3", "bsdutils.copyright")) for p in shown)
    page.select_option("#cat", "")
    page.fill("#q", "bsdutils")
    assert visible(page, "article.doc") == 1 and "1 document matches" in page.locator("#shown").inner_text()
    page.fill("#q", "")
    assert visible(page, "article.doc") == docs
    # the contents' links land on their anchors
    page.click("a[href='#r-strong_copyleft']")
    assert page.evaluate("location.hash") == "#r-strong_copyleft"
    page.close()


def test_a_large_report_keeps_its_headings_and_numbers_whole_on_a_phone(browser: Any, tmp_path: Path) -> None:
    results = report_results()
    many = [
        {"category": c, "severity": "medium", "quote": f"notice {i}", "line_start": i, "line_end": i}
        for i in range(1, 1201)
        for c in ("attribution", "patent_retaliation", "arbitration")
    ]
    results.append(
        {"path": "/srv/many.txt", "family": "MIT", "flags": many, "summary": "many", "step_id": 90}
    )
    audit = {"steps": 1203, "model_calls": 4222, "input_tokens": 19984792, "tokens": 20928662, "usd": 0.0012}
    files = report.write_report(tmp_path, results, audit, [], run=TEST_RUN)
    page = browser.new_page(viewport={"width": 390, "height": 844}, device_scale_factor=1)
    try:
        page.goto(files.html.as_uri())
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        assert broken_cells(page) == []
        assert "1,206" in page.locator("#summary table").inner_text()
        assert "19,984,792" in page.locator("#audit").inner_text()
    finally:
        page.close()
