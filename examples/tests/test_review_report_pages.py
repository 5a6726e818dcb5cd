"""
A report too large for one page: 2,000 documents built straight through report.write_report (no
job), so the test stays quick. The index (summary, the documents needing a lawyer's look, the
families with their pages) and every page stay light enough for a phone; every link between the
pages leads to a file and an anchor that exist; in headless Chromium the index shows the counts,
its links land on the pages, and a family page's filters and paging work.
"""

from __future__ import annotations

import csv
import os
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from pgflight_review import report
from pgflight_review.clauses import CATEGORIES, CATEGORY_SEVERITY

#: What a page may weigh to stay light on a phone.
PHONE_BYTES = 300_000
DOCUMENTS = 2_000
FAMILIES = ("GPL-2.0", "GPL-3.0", "MIT", "Apache-2.0", "BSD-3-Clause", "LGPL-2.1", "MPL-2.0", "custom")


def synthetic_results(n: int, seed: int = 3) -> list[dict[str, Any]]:
    """`n` documents' results: up to seven flags each, most wordings shared, 1 % not reviewed."""
    rng = random.Random(seed)
    words = ("licence", "software", "party", "shall", "notice", "source", "terms", "use", "<b>", "&")
    wordings = [f"Wording {k}: " + " ".join(rng.choice(words) for _ in range(40)) for k in range(60)]
    out: list[dict[str, Any]] = []
    for i in range(n):
        flags = []
        for j in range(rng.randint(0, 7)):
            c = rng.choice(CATEGORIES)
            a = rng.randint(1, 400)
            own = f"A wording of document {i}, clause {j}, its own. " * 3
            flags.append(
                {
                    "category": c,
                    "severity": CATEGORY_SEVERITY[c],
                    "quote": f"quote {j}",
                    "line_start": a,
                    "line_end": a + rng.randint(0, 3),
                    "context": rng.choice(wordings) if rng.random() < 0.7 else own,
                }
            )
        failed = rng.random() < 0.01
        out.append(
            {
                "path": f"/srv/contracts/vendor-{i % 97:02d}/doc-{i:05d}.txt",
                "family": rng.choice(FAMILIES),
                "flags": flags,
                "status": "dead_letter" if failed else "succeeded",
                "error": "worker killed 3 times" if failed else None,
                "step_id": 1000 + i,
            }
        )
    return out


@pytest.fixture(scope="module")
def paged(tmp_path_factory: pytest.TempPathFactory) -> tuple[report.ReportFiles, report.Report]:
    out = tmp_path_factory.mktemp("paged")
    results = synthetic_results(DOCUMENTS)
    skipped = [{"path": f"/srv/skip/{k}.bin", "reason": "binary"} for k in range(60)]
    run = report.RunInfo(
        run_id=7, date="2026-01-02 03:04 UTC", engine_version="9.9", model="offline", host="h"
    )
    files = report.write_report(out, results, {"steps": DOCUMENTS + 2}, skipped, run=run)
    docs = [report.DocumentResult.model_validate(r) for r in results]
    rep = report.build(docs, [report.SkippedRecord.model_validate(s) for s in skipped], {}, run, "t")
    return files, rep


@dataclass
class _Links:
    hrefs: list[str]
    ids: set[str]


def _parse(path: Path) -> _Links:
    """The page's links and anchors (the report writes every attribute double-quoted, escaped)."""
    text = path.read_text(encoding="utf-8")
    return _Links(re.findall(r'<a [^>]*?href="([^"]*)"', text), set(re.findall(r'\sid="([^"]*)"', text)))


@pytest.mark.xdist_group("report_pages")  # one worker builds the report once for both tests
def test_every_page_is_light_and_every_link_between_pages_lands(
    paged: tuple[report.ReportFiles, report.Report],
) -> None:
    files, rep = paged
    html = [files.html, *(p for p in files.pages if p.suffix == ".html")]
    md = [files.markdown, *(p for p in files.pages if p.suffix == ".md")]
    assert len(html) == len(md) > 10
    sizes = {p.name: p.stat().st_size for p in html}
    assert max(sizes.values()) < PHONE_BYTES, sorted(sizes.items(), key=lambda kv: -kv[1])[:3]
    assert files.html.stat().st_size < 100_000  # the index: summary and lists, no document's text
    parsed = {p.resolve(): _parse(p) for p in html}
    checked = 0
    for page, links in parsed.items():
        for href in links.hrefs:
            url = urlsplit(href)
            if url.scheme:  # file:// links open the documents themselves
                continue
            target = (page.parent / unquote(url.path)).resolve() if url.path else page
            assert target in parsed, f"{page.name}: {href} leads to no page"
            assert not url.fragment or url.fragment in parsed[target].ids, (
                f"{page.name}: {href}: no such anchor"
            )
            checked += 1
    assert checked > DOCUMENTS  # every document is reachable from the index's lists and pages
    # every reviewed document is on exactly one family page
    family_pages = [p for p in html[1:] if p.name.startswith("f")]
    documents = [i for p in family_pages for i in parsed[p.resolve()].ids if re.fullmatch(r"d\d+", i)]
    assert len(documents) == len(set(documents)) == rep.reviewed
    # flags.csv stays one complete file: a row per finding of every reviewed document
    with open(files.csv, encoding="utf-8", newline="") as fh:
        assert sum(1 for _ in csv.reader(fh)) - 1 == rep.findings > DOCUMENTS
    # the Markdown index links its pages too, and carries no document's findings itself
    index_md = files.markdown.read_text(encoding="utf-8")
    assert "](pages/f1-" in index_md and "#### `" not in index_md
    for m in re.finditer(r"\]\((pages/[^)#]+)\)", index_md):
        assert (files.markdown.parent / m.group(1)).exists(), m.group(1)


CHROMIUM = os.environ.get("PGFLIGHT_CHROMIUM", "/usr/bin/chromium")


@pytest.mark.xdist_group("report_pages")
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs the chromium apt package")
def test_the_index_shows_the_counts_and_its_links_lead_through_the_pages_in_chromium(
    browser: Any, paged: tuple[report.ReportFiles, report.Report]
) -> None:
    files, rep = paged
    page = browser.new_page(viewport={"width": 390, "height": 844}, device_scale_factor=1)
    try:
        page.goto(files.html.as_uri())
        page.wait_for_function("performance.getEntriesByName('first-contentful-paint').length > 0")
        paint = page.evaluate(
            "performance.getEntriesByName('first-contentful-paint').map(e => e.startTime)[0] || null"
        )
        assert paint is not None and paint < 3000, paint  # milliseconds
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        cards = page.locator("#summary .cards").inner_text()
        assert f"{rep.needs_review:,}\ndocuments need a lawyer's look" in cards
        assert f"{rep.reviewed:,}\nof {DOCUMENTS:,} documents reviewed" in cards
        families = page.locator("#families table").inner_text()
        assert all(f.name in families for f in rep.families)
        listed = page.eval_on_selector_all("#families td.n:nth-child(2)", "tds => tds.map(t => t.innerText)")
        assert sum(int(n.replace(",", "")) for n in listed) == rep.reviewed
        # a reason lists its first documents; its link lands on the document's family page and anchor
        first = page.locator("ul.reason li a").first
        anchor = first.get_attribute("href").split("#")[1]
        first.click()
        assert "/pages/f" in page.url and page.evaluate("location.hash") == f"#{anchor}"
        assert page.evaluate(f"document.getElementById('{anchor}').getBoundingClientRect().top") < 844
        # paging: next, then back to the index
        page.goto(files.html.as_uri())
        page.locator("#families table a").first.click()
        on_first = page.locator("article.doc").count()
        assert 0 < on_first < DOCUMENTS
        page.click("a[rel=next]")
        assert page.url.endswith("-2.html") and page.locator("article.doc").count() > 0
        # the family page's filters work on its documents
        page.select_option("#sev", "high")
        shown = page.eval_on_selector_all("article.doc", "els => els.filter(e => !e.hidden).length")
        with_high = page.eval_on_selector_all("article.doc.has-high", "els => els.length")
        assert shown == with_high > 0
        page.locator("header a").first.click()
        assert page.url == files.html.as_uri() or page.url.endswith("/report.html")
        # a reason's full list is paged too
        page.locator("#needs-review .pager a").first.click()
        assert "/pages/r-" in page.url and page.locator("ul.reason li").count() > report.INDEX_ROWS
    finally:
        page.close()
