"""
The HTML report in a real browser: headless Chromium (the system's /usr/bin/chromium, driven by
playwright; no browser download) at desktop and phone widths. The filters work without a server,
the summary comes first, nothing overflows a phone's width, and the contents' links land on their
anchors. A screenshot of each width goes to docs/ for the README.
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
