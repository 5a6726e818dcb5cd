"""
The inspector against a web page on another site and against logins outside their lanes:

- ``Host`` must be a loopback name or one the inspector was started with (421 otherwise), so a
  page whose name was rebound to 127.0.0.1 (DNS rebinding) reads nothing and changes nothing;
- every POST must come from the inspector's own origin (``Origin``, or ``Sec-Fetch-Site``);
- each browser session has its own CSRF token, bound to an HttpOnly, SameSite=Strict cookie;
- every response forbids framing;
- a non-loopback bind refuses to start unless visitors sign in (``--auth login``), and signed-in
  visitors act as their own database login;
- an id outside the login's lanes answers exactly as an unknown one (404), and a value the pages
  cannot decode (nested deeper than the running Python decodes, a 5,000-digit number) is shown as
  raw text, not a 500.

Raw HTTP goes through http.client so that any Host, Origin or cookie can be sent; the rebinding
and cross-site cases run in a real headless Chromium.
"""

from __future__ import annotations

import html
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import psycopg
import pytest
from psycopg.types.json import Jsonb

import inspector_support as scenario
from core_helpers import claim_one, complete, register, scalar, submit
from inspector_browser import Served, page, serve  # noqa: F401  (fixtures)
from security_support import grant
from worker_support import undecodable_json_depth

CHROMIUM = os.environ.get("PGFLIGHT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]
EVIL = "evil.example"


@dataclass
class Reply:
    status: int
    headers: dict[str, list[str]]
    text: str

    def header(self, name: str) -> str | None:
        got = self.headers.get(name.lower())
        return got[0] if got else None


def call(
    served: Served,
    method: str,
    path: str,
    *,
    host: str | None = None,
    headers: dict[str, str] | None = None,
    form: dict[str, str] | None = None,
) -> Reply:
    """One request to the inspector with exactly these headers (`host` None: its own netloc)."""
    parts = urlsplit(served.url)
    c = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=20)
    try:
        c.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        c.putheader("Host", host if host is not None else parts.netloc)
        body = urlencode(form).encode() if form is not None else None
        if body is not None:
            c.putheader("Content-Type", "application/x-www-form-urlencoded")
            c.putheader("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            c.putheader(k, v)
        c.endheaders(body)
        r = c.getresponse()
        got: dict[str, list[str]] = {}
        for k, v in r.getheaders():
            got.setdefault(k.lower(), []).append(v)
        return Reply(r.status, got, r.read().decode("utf-8", errors="replace"))
    finally:
        c.close()


@dataclass
class Visit:
    """What a browser holds after opening an operator page: its cookie header and the page's token."""

    cookie: str
    token: str


def visit(served: Served, path: str = "/dead-letters") -> Visit:
    """Open an operator page with a fresh cookie jar; keep the cookie it set and the form's token."""
    r = call(served, "GET", path)
    assert r.status == 200, r.text
    cookie = "; ".join(c.split(";", 1)[0] for c in r.headers.get("set-cookie", []))
    m = re.search(r'name="csrf" value="([^"]+)"', r.text)
    assert m, "the operator page carries a form token"
    return Visit(cookie, m.group(1))


def cancel_form(token: str, run_id: int) -> dict[str, str]:
    return {"csrf": token, "id": str(run_id), "reason": "not mine to cancel", "back": "/runs"}


def run_state(conn: psycopg.Connection[Any], run_id: int) -> str:
    return str(scalar(conn, "select status from pgflight.run_status(%s)", [run_id]))


@pytest.fixture
def built(conn: psycopg.Connection[Any]) -> scenario.Scenario:
    return scenario.build(conn)


@pytest.fixture
def operator(dsn: str, built: scenario.Scenario, serve: Any) -> Served:
    served: Served = serve(scenario.login_dsn(dsn, scenario.OPERATOR))
    return served


# --- Host -----------------------------------------------------------------------------------------


def test_a_host_header_naming_another_site_is_refused_on_every_path_and_loopback_names_pass(
    operator: Served, built: scenario.Scenario, conn: psycopg.Connection[Any]
) -> None:
    port = urlsplit(operator.url).port
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "LOCALHOST", "localhost."):
        assert call(operator, "GET", "/runs", host=host).status == 200, host
    run = submit(conn, "noop", {}, workspace="acme")
    mine = visit(operator)
    for host in (f"{EVIL}:{port}", EVIL, f"127.0.0.1.{EVIL}:{port}", f"{EVIL}@127.0.0.1"):
        for method, path in (("GET", "/runs"), ("GET", f"/runs/{built.finished_run}"), ("GET", "/metrics")):
            r = call(operator, method, path, host=host)
            assert r.status in (400, 421), (host, path, r.status)
            assert "csrf" not in r.text and "pgflight_" not in r.text
        r = call(
            operator,
            "POST",
            "/actions/cancel",
            host=host,
            headers={"Cookie": mine.cookie, "Origin": f"http://{host}"},
            form=cancel_form(mine.token, run.run_id),
        )
        assert r.status in (400, 421), (host, r.status)
    assert call(operator, "GET", "/runs", host="").status == 400
    assert run_state(conn, run.run_id) != "cancelled"


# --- same origin on POST ---------------------------------------------------------------------------


def test_a_post_must_come_from_the_inspectors_own_origin(
    operator: Served, conn: psycopg.Connection[Any]
) -> None:
    run = submit(conn, "noop", {}, workspace="acme")
    mine = visit(operator)
    port = urlsplit(operator.url).port or 80
    refused: tuple[dict[str, str], ...] = (
        {},  # neither Origin nor Sec-Fetch-Site
        {"Origin": f"http://{EVIL}:{port}"},
        {"Origin": f"http://{EVIL}"},
        {"Origin": "null"},
        {"Origin": f"http://127.0.0.1:{port + 1}"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
        {"Origin": f"http://{EVIL}", "Sec-Fetch-Site": "same-origin"},  # a wrong Origin wins
    )
    for extra in refused:
        r = call(
            operator,
            "POST",
            "/actions/cancel",
            headers={"Cookie": mine.cookie, **extra},
            form=cancel_form(mine.token, run.run_id),
        )
        assert r.status == 403, (extra, r.status, r.text)
        assert run_state(conn, run.run_id) != "cancelled", extra
    ok = call(
        operator,
        "POST",
        "/actions/cancel",
        headers={"Cookie": mine.cookie, "Origin": operator.url},
        form=cancel_form(mine.token, run.run_id),
    )
    assert ok.status == 303, ok.text
    assert run_state(conn, run.run_id) == "cancelled"
    other = submit(conn, "noop", {}, workspace="acme")
    ok = call(
        operator,
        "POST",
        "/actions/cancel",
        headers={"Cookie": mine.cookie, "Sec-Fetch-Site": "same-origin"},
        form=cancel_form(mine.token, other.run_id),
    )
    assert ok.status == 303, ok.text


# --- the CSRF token per browser session --------------------------------------------------------


def test_each_browser_session_has_its_own_token_in_a_strict_httponly_cookie(
    operator: Served, conn: psycopg.Connection[Any]
) -> None:
    run = submit(conn, "noop", {}, workspace="acme")
    a, b = visit(operator), visit(operator)
    assert a.cookie and b.cookie and a.cookie != b.cookie
    assert a.token != b.token
    set_cookie = call(operator, "GET", "/runs").header("set-cookie") or ""
    attrs = {p.strip().lower() for p in set_cookie.split(";")[1:]}
    assert {"httponly", "samesite=strict", "path=/"} <= attrs, set_cookie
    # a page returns the same token to the same browser session, and sets no new cookie
    again = call(operator, "GET", "/dead-letters", headers={"Cookie": a.cookie})
    assert f'value="{a.token}"' in again.text and again.header("set-cookie") is None
    same_origin = {"Origin": operator.url}
    for cookie, token in (
        (b.cookie, a.token),
        ("", a.token),
        (a.cookie, ""),
        (a.cookie, a.token[:-2] + "xx"),
    ):
        r = call(
            operator,
            "POST",
            "/actions/cancel",
            headers={"Cookie": cookie, **same_origin} if cookie else same_origin,
            form=cancel_form(token, run.run_id),
        )
        assert r.status == 403 and "CSRF" in r.text, (cookie, r.status)
    assert run_state(conn, run.run_id) != "cancelled"


# --- framing -----------------------------------------------------------------------------------------


def test_every_response_forbids_framing(operator: Served, built: scenario.Scenario) -> None:
    mine = visit(operator)
    replies = [
        call(operator, "GET", "/runs"),
        call(operator, "GET", f"/runs/{built.finished_run}"),
        call(operator, "GET", "/runs/987654321"),
        call(operator, "GET", "/static/style.css"),
        call(operator, "GET", "/metrics"),
        call(operator, "GET", "/runs", host=EVIL),
        call(operator, "POST", "/actions/cancel", headers={"Cookie": mine.cookie}, form={"id": "1"}),
    ]
    assert [r.status for r in replies] == [200, 200, 404, 200, 200, 421, 403]
    for r in replies:
        assert "frame-ancestors 'none'" in (r.header("content-security-policy") or ""), r.status
        assert r.header("x-frame-options") == "DENY", r.status


# --- 404 for what the login may not see, raw text for what the page cannot decode -----------------


def test_an_id_outside_the_logins_lanes_answers_as_an_unknown_id(
    dsn: str, conn: psycopg.Connection[Any], logins: Any, serve: Any
) -> None:
    conn.execute("select pgflight.create_workspace('ws_a')")
    conn.execute("select pgflight.create_workspace('ws_b')")
    grant(conn, "pgf_reader_a", "ws_a", "reader")
    w = register(conn, "w-b")
    theirs = submit(conn, "agent", {}, workspace="ws_b")
    c = claim_one(conn, w, recipes=["agent"])
    agent_run_id = int(
        scalar(
            conn,
            "select agent_run_id from pgflight.begin_agent_run(%s, %s, %s)",
            [c.attempt_id, c.token, Jsonb({"model": "claude-haiku-4-5", "task": "b's secret"})],
        )
    )
    complete(conn, c, {"b": "secret"})
    ours = submit(conn, "noop", {}, workspace="ws_a")
    served = serve(logins.dsn("pgf_reader_a", dsn))
    assert call(served, "GET", f"/runs/{ours.run_id}").status == 200
    unknown = 9_000_000_000
    for path in (
        f"/runs/{theirs.run_id}",
        f"/steps/{theirs.step_id}",
        f"/steps/{theirs.step_id}/transcript",
        f"/steps/{theirs.step_id}/diff",
        f"/whole/attempt/{theirs.attempt_id}/result",
        f"/whole/trace/{agent_run_id}/0/0",
        f"/runs/{unknown}",
        f"/steps/{unknown}",
        f"/steps/{unknown}/transcript",
        f"/whole/attempt/{unknown}/result",
        f"/whole/trace/{unknown}/0/0",
        "/runs/99999999999999999999999",
        "/steps/-99999999999999999999999",
    ):
        r = call(served, "GET", path)
        assert r.status == 404, (path, r.status, r.text[:300])
        assert "secret" not in r.text


def _deep(depth: int) -> str:
    return '{"a":' + "[" * depth + "]" * depth + "}"


def test_a_value_the_pages_cannot_decode_is_shown_as_raw_text_not_a_500(
    conn: psycopg.Connection[Any], operator: Served, built: scenario.Scenario
) -> None:
    # values stored before the depth cap existed, or under a cap the owner raised: the pages must
    # still show them (settings.max_json_depth refuses them through the API by default)
    depth = undecodable_json_depth()  # deeper than this Python decodes
    conn.execute("update pgflight.settings set max_json_depth = %s", [depth + 10])
    w = register(conn, "w-deep")
    deep = submit(conn, "noop", {}, workspace="acme")
    big = submit(conn, "noop", {}, workspace="acme")
    for sub, text in ((deep, _deep(depth)), (big, '{"n": ' + "7" * 5000 + "}")):
        c = claim_one(conn, w, recipes=["noop"])
        assert c.run_id == sub.run_id
        # stored as the database holds it, whatever the API would accept today
        conn.execute("select * from pgflight.complete_step(%s, %s, %s::jsonb)", [c.attempt_id, c.token, text])
    for sub, needle, note in (
        (deep, '{"a": [[[[', "nested deeper than"),
        (big, '{"n": 7777', "not decodable"),
    ):
        for path in (f"/runs/{sub.run_id}", f"/steps/{sub.step_id}"):
            r = call(operator, "GET", path)
            assert r.status == 200, (path, r.status, r.text[:300])
            text = html.unescape(r.text)
            assert needle in text and note in text, path
            assert "more characters clipped" in text, path  # the raw text is truncated on the page
        whole = call(operator, "GET", f"/whole/attempt/{sub.attempt_id}/result")
        assert whole.status == 200 and whole.text.replace(" ", "").startswith(needle.replace(" ", ""))
    # nested just within what Python decodes: shown, whether indented or on one line
    edge = submit(conn, "noop", {}, workspace="acme")
    c = claim_one(conn, w, recipes=["noop"])
    conn.execute(
        "select * from pgflight.complete_step(%s, %s, %s::jsonb)", [c.attempt_id, c.token, _deep(990)]
    )
    for path in (
        f"/runs/{edge.run_id}",
        f"/steps/{edge.step_id}",
        f"/whole/attempt/{edge.attempt_id}/result",
    ):
        r = call(operator, "GET", path)
        assert r.status == 200 and "[[[[" in r.text.replace(" ", "").replace("\n", ""), path


# --- the bind -----------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ui(dsn: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", "from pgflight.cli.app import main; main()", "ui", *args],
        env={**os.environ, "PGFLIGHT_DSN": dsn},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_a_non_loopback_bind_refuses_to_start_without_sign_in(dsn: str) -> None:
    for args in (
        ["--host", "0.0.0.0"],
        ["--host", "::"],
        ["--host", "0.0.0.0", "--auth", "login"],  # a wildcard bind must name its host names
    ):
        port = _free_port()
        proc = _ui(dsn, *args, "--port", str(port))
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            pytest.fail(f"pgflight ui {' '.join(args)} started serving instead of refusing")
        assert proc.returncode == 2, (args, out, err)
        assert "refusing to serve the inspector" in err, err
        assert not _listening(port)
    # the loopback address still starts, and a wildcard bind with sign-in and its names starts
    for args in (
        ["--host", "127.0.0.1"],
        ["--host", "0.0.0.0", "--auth", "login", "--allow-host", "insp.test"],
    ):
        port = _free_port()
        proc = _ui(dsn, *args, "--port", str(port))
        try:
            deadline = time.monotonic() + 30
            while not _listening(port):
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, args
                time.sleep(0.1)
        finally:
            proc.terminate()
            proc.communicate(timeout=15)


# --- signing in -----------------------------------------------------------------------------------


def test_visitors_sign_in_with_a_database_login_and_act_in_its_own_lane(
    dsn: str, conn: psycopg.Connection[Any], logins: Any, serve: Any, browser: Any
) -> None:
    conn.execute("select pgflight.create_workspace('ws_a')")
    conn.execute("select pgflight.create_workspace('ws_b')")
    grant(conn, "pgf_reader_a", "ws_a", "reader")
    grant(conn, "pgf_operator_a", "ws_a", "operator")
    ours = submit(conn, "noop", {}, workspace="ws_a")
    theirs = submit(conn, "noop", {}, workspace="ws_b")
    served = serve(dsn, auth="login")  # the DSN's host and database; each visitor's own login

    # signed out: pages lead to the sign-in form, actions and metrics are refused
    assert call(served, "GET", "/runs").status == 303
    assert call(served, "GET", "/metrics").status == 303
    r = call(
        served, "POST", "/actions/cancel", headers={"Origin": served.url}, form=cancel_form("x", ours.run_id)
    )
    assert r.status == 403

    ctx = browser.new_context()
    try:
        pg = ctx.new_page()
        pg.goto(served.url + "/runs")
        assert urlsplit(pg.url).path == "/login"
        before = {c["name"]: c["value"] for c in ctx.cookies()}["pgflight_session"]
        pg.fill("input[name=login]", "pgf_reader_a")
        pg.fill("input[name=password]", "wrong password")
        pg.click("#signin")
        assert "sign-in failed" in pg.locator("#login-error").inner_text()
        pg.fill("input[name=login]", "pgf_reader_a")
        pg.fill("input[name=password]", logins.password)
        pg.click("#signin")
        assert urlsplit(pg.url).path == "/runs"
        assert pg.locator("#who").inner_text() == "pgf_reader_a · reader lane"
        after = {c["name"]: c["value"] for c in ctx.cookies()}["pgflight_session"]
        assert after != before  # the session id changes at sign-in
        assert pg.goto(f"{served.url}/runs/{ours.run_id}").status == 200
        assert pg.goto(f"{served.url}/runs/{theirs.run_id}").status == 404
        pg.goto(served.url + "/runs")
        pg.click("#signout")
        assert urlsplit(pg.url).path == "/login"
        pg.goto(served.url + "/runs")
        assert urlsplit(pg.url).path == "/login"
        # the old session's cookie is worth nothing now
        assert call(served, "GET", "/runs", headers={"Cookie": f"pgflight_session={after}"}).status == 303

        # an operator of ws_a cancels its own run; the event names that login
        pg.fill("input[name=login]", "pgf_operator_a")
        pg.fill("input[name=password]", logins.password)
        pg.click("#signin")
        assert pg.locator("#who").inner_text() == "pgf_operator_a · operator lane"
        pg.goto(f"{served.url}/runs/{ours.run_id}")
        form = pg.locator("form.action").filter(has=pg.locator("button", has_text="Cancel run"))
        form.locator("input[name=reason]").fill("signed in and cancelled")
        form.locator("button").click()
        assert pg.locator("#flash").inner_text() == f"run {ours.run_id}: cancelled"
        assert run_state(conn, ours.run_id) == "cancelled"
        assert (
            scalar(
                conn,
                "select count(*) from pgflight.run_events where run_id = %s and actor = 'pgf_operator_a'",
                [ours.run_id],
            )
            >= 1
        )
    finally:
        ctx.close()


# --- in Chromium: a rebound name and a cross-site form -----------------------------------------


ATTACK = """<!doctype html><title>cute cats</title><script>
(async () => {
  const out = {};
  try {
    const page = await fetch('/dead-letters');
    out.page = page.status;
    const m = (await page.text()).match(/name="csrf" value="([^"]+)"/);
    out.token = m ? m[1] : null;
    const body = new URLSearchParams(
      {csrf: out.token || 'guess', id: 'RUN', reason: 'rebound', back: '/runs'});
    const post = await fetch('/actions/cancel', {method: 'POST', body, redirect: 'manual'});
    out.post = post.status;
  } catch (e) { out.error = String(e); }
  window.__result = out;
})();
</script>"""


def test_a_page_on_a_rebound_name_cannot_read_the_token_or_cancel_a_run_in_chromium(
    operator: Served, conn: psycopg.Connection[Any], browser: Any
) -> None:
    run = submit(conn, "noop", {}, workspace="acme")
    port = urlsplit(operator.url).port
    # evil.example now resolves to 127.0.0.1: the attacker's page shares an origin with whatever
    # listens on that port of this machine. Chromium's own check on pages reaching the loopback
    # (which other browsers do not make) is off: the inspector must hold without it.
    rebound = browser.browser_type.launch(
        executable_path=CHROMIUM,
        args=[
            *CHROMIUM_ARGS,
            f"--host-resolver-rules=MAP {EVIL} 127.0.0.1",
            "--disable-features=LocalNetworkAccessChecks,PrivateNetworkAccessSendPreflights,"
            "PrivateNetworkAccessRespectPreflightResults,BlockInsecurePrivateNetworkRequests",
        ],
    )
    try:
        ctx = rebound.new_context()
        pg = ctx.new_page()
        # the operator's browser has used the inspector (it holds a session cookie for 127.0.0.1)
        assert pg.goto(operator.url + "/dead-letters").status == 200
        ctx.route(
            f"http://{EVIL}:{port}/cats.html",
            lambda route: route.fulfill(
                status=200, content_type="text/html", body=ATTACK.replace("RUN", str(run.run_id))
            ),
        )
        pg.goto(f"http://{EVIL}:{port}/cats.html")
        pg.wait_for_function("window.__result !== undefined", timeout=15_000)
        got = pg.evaluate("window.__result")
        ctx.close()
    finally:
        rebound.close()
    assert "error" not in got, got
    assert got["page"] == 421 and got["token"] is None, got
    assert got["post"] == 421, got
    assert run_state(conn, run.run_id) != "cancelled"


def test_a_cross_site_form_post_is_refused_even_with_the_victims_token_in_chromium(
    operator: Served, conn: psycopg.Connection[Any], page: Any
) -> None:
    run = submit(conn, "noop", {}, workspace="acme")
    page.goto(operator.url + "/dead-letters")
    token = page.locator("input[name=csrf]").first.get_attribute("value")  # leaked, say
    attack = f"""<!doctype html><form method="post" action="{operator.url}/actions/cancel">
<input name="csrf" value="{token}"><input name="id" value="{run.run_id}">
<input name="reason" value="cross-site"><input name="back" value="/runs"></form>
<script>document.forms[0].submit()</script>"""
    page.route(
        f"http://{EVIL}/cats.html",
        lambda route: route.fulfill(status=200, content_type="text/html", body=attack),
    )
    with page.expect_response(lambda r: r.url.endswith("/actions/cancel")) as posted:
        page.goto(f"http://{EVIL}/cats.html")
    assert posted.value.status == 403
    assert run_state(conn, run.run_id) != "cancelled"


def _sign_in_form(served: Served) -> Visit:
    """A fresh browser session's cookie and the sign-in form's token."""
    r = call(served, "GET", "/login")
    assert r.status == 200, r.text
    cookie = "; ".join(c.split(";", 1)[0] for c in r.headers.get("set-cookie", []))
    m = re.search(r'name="csrf" value="([^"]+)"', r.text)
    assert m
    return Visit(cookie, m.group(1))


def test_sign_in_is_throttled_per_address_and_a_session_ends_when_idle(
    dsn: str, conn: psycopg.Connection[Any], logins: Any, serve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pgflight.inspector import guard

    served = serve(dsn, auth="login")
    same_origin = {"Origin": served.url}
    form = _sign_in_form(served)
    headers = {"Cookie": form.cookie, **same_origin}

    def sign_in(password: str) -> Reply:
        fields = {"csrf": form.token, "login": "pgf_reader_a", "password": password}
        return call(served, "POST", "/login", headers=headers, form=fields)

    # the sign-in form itself is a POST: another origin cannot submit it
    r = call(
        served,
        "POST",
        "/login",
        headers={"Cookie": form.cookie, "Origin": f"http://{EVIL}"},
        form={"csrf": form.token, "login": "pgf_reader_a", "password": logins.password},
    )
    assert r.status == 403
    good = sign_in(logins.password)
    assert good.status == 303 and good.header("location") == "/runs"
    sid = re.search(r"pgflight_session=([^;]+)", good.header("set-cookie") or "")
    assert sid and sid.group(1) not in form.cookie
    session = {"Cookie": f"pgflight_session={sid.group(1)}"}
    assert call(served, "GET", "/runs", headers=session).status == 200

    def inspector_backends() -> int:
        return int(
            scalar(
                conn,
                "select count(*) from pg_stat_activity where usename = 'pgf_reader_a'"
                " and application_name = 'pgflight-inspector'",
            )
        )

    assert inspector_backends() == 1
    # idle past the limit: the session is gone and its connection closed
    monkeypatch.setattr(guard, "IDLE_S", 0.5)
    time.sleep(1.0)
    assert call(served, "GET", "/runs", headers=session).status == 303
    deadline = time.monotonic() + 10
    while inspector_backends() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert inspector_backends() == 0

    for _ in range(guard.FAILED_MAX):
        assert sign_in("wrong").status == 401
    # then even the right password waits
    assert sign_in(logins.password).status == 429


def test_the_rules_in_words() -> None:
    from pgflight.inspector import guard, view

    for ok in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"):
        guard.check_bind(ok, "none")
    for exposed in ("0.0.0.0", "::", "192.168.1.5", "10.0.0.1", "inspector.example.com"):
        with pytest.raises(guard.Refused, match="--auth login"):
            guard.check_bind(exposed, "none")
    guard.check_bind("192.168.1.5", "login")
    with pytest.raises(guard.Refused, match="--allow-host"):
        guard.check_bind("0.0.0.0", "login")
    guard.check_bind("0.0.0.0", "login", ["insp.example"])
    assert guard.host_names("0.0.0.0") == guard.LOOPBACK_NAMES
    assert guard.host_names("10.0.0.1", ["Insp.Example."]) == guard.LOOPBACK_NAMES | {
        "10.0.0.1",
        "insp.example",
    }
    assert [guard.split_host(h) for h in ("a.b:80", "[::1]:8", "A.B.", "a b", "a@b", "[::1", "a:x", "")] == [
        "a.b",
        "::1",
        "a.b",
        None,
        None,
        None,
        None,
        None,
    ]
    deep = view.loads(_deep(undecodable_json_depth()))  # deeper than this Python decodes
    assert isinstance(deep, view.RawJson) and "nested deeper than" in deep.reason
    assert view.loads('{"s": "' + "[" * 5000 + '"}') == {"s": "[" * 5000}  # brackets in a string
    assert view.loads(_deep(150)) == json.loads(_deep(150))
    assert isinstance(view.loads("7" * 5000), view.RawJson)


def test_a_link_from_another_site_keeps_the_signed_in_session_in_chromium(
    dsn: str, conn: psycopg.Connection[Any], logins: Any, serve: Any, page: Any
) -> None:
    conn.execute("select pgflight.create_workspace('ws_a')")
    grant(conn, "pgf_reader_a", "ws_a", "reader")
    ours = submit(conn, "noop", {}, workspace="ws_a")
    served = serve(dsn, auth="login")
    page.goto(served.url + "/login")
    page.fill("input[name=login]", "pgf_reader_a")
    page.fill("input[name=password]", logins.password)
    page.click("#signin")
    assert page.locator("#who").inner_text() == "pgf_reader_a · reader lane"
    link = f'<!doctype html><a id="go" href="{served.url}/runs/{ours.run_id}?x=1">the run</a>'
    page.route(
        f"http://{EVIL}/chat.html",
        lambda route: route.fulfill(status=200, content_type="text/html", body=link),
    )
    page.goto(f"http://{EVIL}/chat.html")
    page.click("#go")
    page.wait_for_url(f"{served.url}/runs/{ours.run_id}?x=1")
    assert page.locator("#who").inner_text() == "pgf_reader_a · reader lane"
    assert page.locator("h1").inner_text().startswith(f"Run {ours.run_id}")
