"""
The run inspector in a real headless Chromium, on a database holding a finished run, a failed
run with a dead letter, a parked approval and an agent run whose tool call was interrupted by a
reclaimed attempt (inspector_support.build). Logins are real roles with passwords: an operator
(pgflight_operator) and a reader (pgflight_reader). Screenshots land in out/ui-shots/.
"""

from __future__ import annotations

import re
from typing import Any

import psycopg
import pytest

import inspector_support as scenario
from core_helpers import scalar, submit_many
from inspector_browser import Served, page, serve, shot  # noqa: F401  (fixtures)

PAGES = {
    "runs": "/runs",
    "dead-letters": "/dead-letters",
    "approvals": "/approvals",
    "workers": "/workers",
    "queues": "/queues",
    "costs": "/costs",
}


@pytest.fixture
def built(conn: psycopg.Connection[Any]) -> scenario.Scenario:
    return scenario.build(conn)


def _open(page: Any, served: Served, path: str) -> Any:
    response = page.goto(served.url + path)
    assert response is not None and response.status == 200, f"{path}: {response and response.status}"
    return response


def test_every_page_opens_and_a_click_leads_from_run_to_step_to_transcript(
    dsn: str, built: scenario.Scenario, serve: Any, page: Any
) -> None:
    served = serve(scenario.login_dsn(dsn, scenario.OPERATOR))
    for name, path in PAGES.items():
        _open(page, served, path)
        assert page.locator("#who").inner_text() == "insp_operator · operator lane"
        shot(page, name)

    # runs list: every run with its state (a parked gate is "waiting")
    _open(page, served, "/runs")
    states = {
        int(r.locator("td").nth(0).inner_text()): r.locator("td").nth(1).inner_text()
        for r in page.locator("table.runs tr").all()[1:]
    }
    assert states == {
        built.finished_run: "succeeded",
        built.failed_run: "failed",
        built.gated_run: "waiting",
        built.agent_run: "succeeded",
    }

    # run -> step -> transcript by clicking
    page.click(f"a.run-link[href='/runs/{built.agent_run}']")
    assert page.url.endswith(f"/runs/{built.agent_run}")
    audit = page.locator("#audit-row td").all_inner_texts()
    assert audit[:5] == ["2", "1", "1", "1", "0"]  # attempts, retries, reclaims, stale writes, dead letters
    shot(page, "run")
    page.click(f".tree a[href='/steps/{built.agent_step}']")
    assert page.url.endswith(f"/steps/{built.agent_step}")
    assert page.locator("details.attempt").count() == 2
    assert page.locator(".token").count() == 2  # fencing tokens: operator lane only
    shot(page, "step")
    page.click("#transcript-link")
    assert page.url.endswith(f"/steps/{built.agent_step}/transcript")
    state = page.locator(".tool-state").inner_text()
    first, second = built.first_attempt, built.second_attempt
    assert state == f"interrupted: attempt {first} lapsed while it ran; resolved by attempt {second}"
    assert page.locator("details.iteration").count() == 3  # the task and two model calls
    assert "1,200 in / 80 out tokens" in page.locator("#iteration-1 summary").inner_text()
    shot(page, "transcript")
    page.goto(served.url + f"/steps/{built.agent_step}")
    page.click("#diff-link")
    assert page.locator(".d-del").filter(has_text="status: lease_expired").count() == 1
    assert page.locator(".d-add").filter(has_text="status: succeeded").count() == 1
    shot(page, "diff")

    # a run with children draws its tree with child counts
    _open(page, served, f"/runs/{built.finished_run}")
    assert "2 children" in page.locator(".tree summary").first.inner_text()
    assert page.locator(".tree details.node details.node").count() == 2


def test_hostile_content_is_escaped_and_clipped_with_the_whole_a_click_away(
    dsn: str, built: scenario.Scenario, serve: Any, page: Any
) -> None:
    served = serve(scenario.login_dsn(dsn, scenario.READER))
    for path in (
        f"/runs/{built.finished_run}",
        f"/steps/{built.dead_step}",
        f"/steps/{built.agent_step}/transcript",
        "/approvals",
        "/dead-letters",
    ):
        _open(page, served, path)
        # the dead letters' table shows an error's message; the whole error (with the script tag
        # in its traceback) is the cell's title
        shown = page.locator("main").inner_text() + " ".join(
            t or "" for t in page.locator("main td[title]").evaluate_all("tds => tds.map(t => t.title)")
        )
        assert scenario.HOSTILE_SCRIPT in shown, path
        assert page.evaluate("document.querySelectorAll('script').length") == 0, path
        assert page.evaluate("window.__pwned") is None, path

    # binary-looking text is shown with its control characters made visible
    _open(page, served, f"/steps/{built.agent_step}/transcript")
    assert "\\x01\\x02\\x03" in page.locator("#iteration-1").inner_text()
    # the 5,000-character line is clipped, and its block is there whole
    link = page.locator("#iteration-1 a.whole").first
    link.click()
    assert scenario.LONG_LINE in page.locator("body").inner_text()

    # a 1 MB result: the page stays small; "show whole" serves all of it as plain text
    response = _open(page, served, f"/steps/{built.big_child_step}")
    assert len(response.body()) < 60_000
    page.click("a.whole")
    whole = page.request.get(page.url)
    assert whole.headers["content-type"].startswith("text/plain")
    assert len(whole.text()) > 1_000_000 and scenario.BIG_RESULT["blob"] in whole.text()


def test_operator_approves_a_gate_and_retries_a_dead_letter_with_a_reason(
    dsn: str, conn: psycopg.Connection[Any], built: scenario.Scenario, serve: Any, page: Any
) -> None:
    served = serve(scenario.login_dsn(dsn, scenario.OPERATOR))
    _open(page, served, "/approvals")
    form = page.locator("form.action").filter(has=page.locator("button", has_text="Approve"))
    form.locator("input[name=reason]").fill("looks right to me")
    form.locator("button").click()
    assert page.locator("#flash").inner_text() == f"step {built.gated_step}: approved"
    assert page.locator("form.action").count() == 0  # nothing left to decide
    decided = conn.execute(
        "select decision, actor, note from pgflight.approvals where step_id = %s", [built.gated_step]
    ).fetchone()
    assert decided == ("approve", "insp_operator", "looks right to me")
    assert (
        scalar(
            conn,
            "select count(*) from pgflight.run_events where step_id = %s and reason = 'approval_decided'"
            " and actor = 'insp_operator'",
            [built.gated_step],
        )
        == 1
    )

    _open(page, served, "/dead-letters")
    shot(page, "dead-letters-operator")
    page.locator("input[name=reason]").fill("fixed the input")
    page.locator("form.action button").click()
    assert page.locator("#flash").inner_text() == f"step {built.dead_step}: retried"
    assert page.locator("table.dead a").count() == 0
    retried = conn.execute(
        "select actor, detail ->> 'note' from pgflight.run_events where step_id = %s and reason = 'retried'",
        [built.dead_step],
    ).fetchall()
    assert retried == [("insp_operator", "fixed the input")]
    assert (
        scalar(conn, "select status from pgflight.step_status where step_id = %s", [built.dead_step])
        == "queued"
    )


def test_a_reader_sees_no_action_and_a_forged_one_is_refused_by_the_database(
    dsn: str, conn: psycopg.Connection[Any], built: scenario.Scenario, serve: Any, page: Any
) -> None:
    served = serve(scenario.login_dsn(dsn, scenario.READER))
    for path in ("/approvals", "/dead-letters", f"/steps/{built.dead_step}", f"/runs/{built.gated_run}"):
        _open(page, served, path)
        assert page.locator("#who").inner_text() == "insp_reader · reader lane"
        assert page.locator("form.action").count() == 0, path
    _open(page, served, f"/steps/{built.agent_step}")
    assert page.locator(".token").count() == 0  # no fencing token for the reader lane
    stale = page.locator("table.events tr").filter(has_text="stale_result_rejected").inner_text()
    # the engine records no current token in an event; the caller's is hidden from readers
    assert '"caller_token": "(hidden)"' in stale and "current_token" not in stale

    # even with the page's CSRF token, the database refuses the reader
    for kind, target, decision in (("approve", built.gated_step, "approve"), ("retry", built.dead_step, "")):
        got = page.request.post(
            f"{served.url}/actions/{kind}",
            form={"csrf": served.token(page), "id": str(target), "reason": "sneaky", "decision": decision},
            headers={"Origin": served.url},
            max_redirects=0,
        )
        assert got.status == 403, got.text()
        assert "permission denied" in got.text()
    # and without the token nobody gets as far as the database
    got = page.request.post(
        f"{served.url}/actions/retry",
        form={"id": str(built.dead_step), "reason": "x"},
        headers={"Origin": served.url},
        max_redirects=0,
    )
    assert got.status == 403 and "CSRF" in got.text()
    assert conn.execute(
        "select decision from pgflight.approvals where step_id = %s", [built.gated_step]
    ).fetchone() == (None,)
    assert (
        scalar(conn, "select status from pgflight.step_status where step_id = %s", [built.dead_step])
        == "dead_letter"
    )


def test_runs_filter_and_page_by_keyset(
    dsn: str, conn: psycopg.Connection[Any], built: scenario.Scenario, serve: Any, page: Any
) -> None:
    submit_many(conn, 120, recipe="noop", workspace="globex")
    served = serve(scenario.login_dsn(dsn, scenario.READER))

    def run_ids() -> list[int]:
        return [int(t) for t in page.locator("a.run-link").all_inner_texts()]

    _open(page, served, "/runs?status=waiting")
    assert run_ids() == [built.gated_run]
    _open(page, served, "/runs?workspace=acme&recipe=fanout")
    assert run_ids() == [built.finished_run]
    _open(page, served, "/runs?key=fin-")
    assert run_ids() == [built.finished_run]
    _open(page, served, "/runs?status=queued&workspace=globex")
    assert len(run_ids()) == 50

    _open(page, served, "/runs")
    seen: list[int] = []
    while True:
        seen += run_ids()
        nxt = page.locator("a.next")
        if nxt.count() == 0:
            break
        nxt.click()
    assert seen == sorted(seen, reverse=True) and len(seen) == len(set(seen)) == 124

    _open(page, served, "/runs?status=bogus")
    assert re.search(r"unknown status", page.locator(".error").inner_text())
