"""
What a person sees on the inspector's pages in a real headless Chromium, at a desktop width
(1280 px) and a phone's (390 px), on the database of inspector_support.build: no page scrolls
sideways (a wide table scrolls inside its own box), a dead letter is one row with its long error
cut by an ellipsis and whole on hover, counts are grouped by thousands, and USD amounts are written
as the CLI writes them (one formatter, pgflight.fmt). Screenshots land in out/ui-shots/.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import psycopg
import pytest

import inspector_support as scenario
from core_helpers import claim_one, fail, register, scalar, submit
from inspector_browser import Served, serve, shot  # noqa: F401  (fixtures)
from pgflight import fmt

WIDTHS = {"desktop": (1280, 900), "phone": (390, 844)}
LONG_ERROR = "the upstream service refused the request: " + "quota exceeded for this account; " * 20


@pytest.fixture
def built(conn: psycopg.Connection[Any]) -> scenario.Scenario:
    return scenario.build(conn)


def _pages(b: scenario.Scenario) -> dict[str, str]:
    """Every page of the inspector, by the name of its screenshot."""
    return {
        "runs": "/runs",
        "run-agent": f"/runs/{b.agent_run}",
        "run-fanout": f"/runs/{b.finished_run}",
        "step": f"/steps/{b.agent_step}",
        "step-dead": f"/steps/{b.dead_step}",
        "step-big": f"/steps/{b.big_child_step}",
        "transcript": f"/steps/{b.agent_step}/transcript",
        "diff": f"/steps/{b.agent_step}/diff",
        "dead-letters": "/dead-letters",
        "approvals": "/approvals",
        "workers": "/workers",
        "queues": "/queues",
        "costs": "/costs",
    }


def _long_dead_letter(conn: psycopg.Connection[Any]) -> int:
    """A dead letter whose error message is far longer than its cell; :return: its step id."""
    w = register(conn, "layout-w")
    s = submit(
        conn,
        "fatal",
        {},
        workspace="globex",
        max_attempts=1,
        idempotency_key="a-long-idempotency-key-" + "k" * 60,
    )
    c = claim_one(conn, w, recipes=["fatal"])
    fail(conn, c, {"type": "UpstreamError", "message": LONG_ERROR, "traceback": "Traceback\n  line 1"})
    return s.step_id


@pytest.mark.parametrize("width", WIDTHS, ids=list(WIDTHS))
def test_no_page_scrolls_sideways(
    dsn: str, conn: psycopg.Connection[Any], built: scenario.Scenario, serve: Any, browser: Any, width: str
) -> None:
    _long_dead_letter(conn)
    served: Served = serve(scenario.login_dsn(dsn, scenario.OPERATOR))
    w, h = WIDTHS[width]
    context = browser.new_context(viewport={"width": w, "height": h})
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        for name, path in _pages(built).items():
            response = page.goto(served.url + path)
            assert response is not None and response.status == 200, path
            overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            shot(page, f"layout-{name}-{w}")
            assert overflow <= 0, f"{path} at {w} px is {overflow} px wider than the screen"
    finally:
        context.close()


def test_a_dead_letter_is_one_row_with_its_error_cut_and_whole_on_hover(
    dsn: str, conn: psycopg.Connection[Any], built: scenario.Scenario, serve: Any, browser: Any
) -> None:
    step_id = _long_dead_letter(conn)
    served: Served = serve(scenario.login_dsn(dsn, scenario.OPERATOR))
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        page.goto(served.url + "/dead-letters")
        rows = page.locator("table.dead tr").all()[1:]
        assert len(rows) == 2  # the scenario's dead letter and the long one
        one_line = page.evaluate("parseFloat(getComputedStyle(document.body).lineHeight)")
        for r in rows:
            for cell in r.locator("td").all():
                # each text cell holds one line (the action form's input and button may be taller)
                lines = cell.evaluate(
                    "td => [...td.childNodes].some(n => n.nodeType === 3 || n.tagName === 'A') "
                    "? td.getClientRects()[0].height : 0"
                )
                assert lines < 2.5 * one_line, cell.inner_text()
        err = page.locator(f"table.dead tr:has(a[href='/steps/{step_id}']) td.err")
        widths = (
            page.locator("table.dead tr")
            .nth(1)
            .locator("td")
            .evaluate_all("tds => tds.map(t => t.getBoundingClientRect().width)")
        )
        assert max(widths) == widths[7]  # the error has the widest column
        cut = err.locator("a")
        assert cut.evaluate("a => a.scrollWidth > a.clientWidth")  # cut, with an ellipsis
        assert cut.evaluate("a => getComputedStyle(a).textOverflow") == "ellipsis"
        assert err.get_attribute("title").startswith('{\n  "type": "UpstreamError"')
        assert LONG_ERROR in err.get_attribute("title")  # the whole error on hover
        assert err.inner_text().startswith("UpstreamError: the upstream service refused the request")
        shot(page, "layout-dead-letters-long-1280")
        cut.click()  # and in the detail view: the step's page
        assert page.url.endswith(f"/steps/{step_id}#attempt-1")
        assert LONG_ERROR.strip() in page.locator("#attempt-1").inner_text()
    finally:
        context.close()


def test_counts_are_grouped_and_usd_reads_as_in_the_cli(
    dsn: str, conn: psycopg.Connection[Any], built: scenario.Scenario, serve: Any, browser: Any
) -> None:
    served: Served = serve(scenario.login_dsn(dsn, scenario.READER))
    usd = scalar(conn, "select usd from pgflight.agent_run_of(%s)", [built.agent_step])
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        page.goto(served.url + f"/steps/{built.agent_step}/transcript")
        totals = page.locator("dl.facts").inner_text()
        assert "2,700 in / 120 out tokens" in totals
        assert "1,200 in / 80 out tokens" in page.locator("#iteration-1 summary").inner_text()
        page.goto(served.url + f"/runs/{built.agent_run}")
        audit = page.locator("#audit-row td").all_inner_texts()
        assert audit[6] == "2,820"  # tokens
        page.goto(served.url + "/costs")
        assert "2,700" in page.locator("table.costs").inner_text()
    finally:
        context.close()
    # the CLI's trace of the same step prints the same amount, and a sub-cent one is not "$0.00"
    env = dict(os.environ, PGFLIGHT_DSN=dsn, COLUMNS="200")
    tr = subprocess.run(
        [sys.executable, "-m", "pgflight.cli", "trace", str(built.agent_step)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert tr.returncode == 0, tr.stderr
    shown = fmt.money(usd)
    assert shown != "$0.00" and shown in tr.stdout
    assert shown in totals
