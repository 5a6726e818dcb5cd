"""
Every CLI command and every inspector page as the logins people use, not as a superuser: an
operator login and a reader login (each granted every workspace), connecting over scram.

The CLI reads only through the read functions and views (``worker_list``, ``pending_approvals``,
``run_waits``, ``unserved_recipes``, ``step_status`` ...), so both logins see what the inspector
shows them; an operator's writes succeed, and a reader's are refused in one line naming the lane,
with no traceback. Each command's output is asserted, not only its exit code.

Left out, with the reason: ``worker`` (a worker login's job; tests_py/test_worker*.py),
``migrate`` and ``db up`` / ``db down`` / ``db psql`` (the installer's, on the embedded cluster),
``ui`` and ``metrics`` (servers: their pages are requested below), ``review`` (the example
application's plugin, tests_py/test_review*.py).
"""

from __future__ import annotations

import http.client
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest

import inspector_support as scenario
from core_helpers import claim_one, register, submit
from inspector_browser import Served, serve  # noqa: F401  (fixture)
from security_support import grant
from test_cli import pgflight

OPERATOR, READER = "pgf_operator_a", "pgf_reader_a"


@dataclass
class World:
    """The inspector's scenario, a step asleep on a timer, and the two logins' DSNs."""

    sc: scenario.Scenario
    sleepy_run: int
    dsn: dict[str, str]


@pytest.fixture
def world(conn: psycopg.Connection[Any], dsn: str, logins: Any) -> World:
    sc = scenario.build(conn)
    # the scenario's workers serve its recipes only, so a submitted noop has no live worker
    conn.execute("update pgflight.workers set recipes = '{fanout,square,fatal,gated,agent,sleepy}'")
    sleepy = submit(conn, "sleepy", {}, workspace="acme")
    c = claim_one(conn, register(conn, "sleeper"), recipes=["sleepy"])
    conn.execute("select * from pgflight.wait_timer(%s, %s, 'sleep:nap', 3600)", [c.attempt_id, c.token])
    conn.execute("update pgflight.workers set recipes = '{sleepy}' where name = 'sleeper'")
    conn.execute("delete from pgflight.workspace_grants where login in (%s, %s)", [OPERATOR, READER])
    grant(conn, OPERATOR, None, "operator")
    grant(conn, READER, None, "reader")
    return World(
        sc,
        sleepy.run_id,
        {lane: logins.dsn(login, dsn) for lane, login in (("operator", OPERATOR), ("reader", READER))},
    )


def ok(w: World, lane: str, *args: str) -> str:
    """Run `pgflight ARGS` as the lane's login; it succeeds with no error line; return stdout."""
    p = pgflight(w.dsn[lane], *args)
    assert p.returncode == 0, (lane, args, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and "permission denied" not in p.stderr, p.stderr
    return p.stdout


def refused(w: World, lane: str, *args: str) -> str:
    """Run `pgflight ARGS` as the lane's login; it is refused in one line (exit 1), no traceback."""
    p = pgflight(w.dsn[lane], *args)
    assert p.returncode == 1, (lane, args, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr, p.stderr
    assert p.stderr.strip().startswith("error:") and "42501" in p.stderr, p.stderr
    return p.stderr


# --- reads: the same output for an operator and a reader ----------------------------------------

READS: list[tuple[str, Callable[[World], list[str]], Callable[[World, str], bool]]] = [
    ("runs", lambda w: ["runs"], lambda w, out: "waiting (approval)" in out and str(w.sc.gated_run) in out),
    (
        "show a gated run",
        lambda w: ["show", str(w.sc.gated_run)],
        lambda w, out: "waiting (approval)" in out and f"approve {w.sc.gated_step} approve" in out,
    ),
    ("show a sleeping run", lambda w: ["show", str(w.sleepy_run)], lambda w, out: "sleep until" in out),
    (
        "events",
        lambda w: ["events", str(w.sc.finished_run)],
        lambda w, out: "running → succeeded" in out,
    ),
    (
        "watch a finished run",
        lambda w: ["watch", str(w.sc.finished_run)],
        lambda w, out: "succeeded" in out,
    ),
    (
        "workers",
        lambda w: ["workers"],
        lambda w, out: all(n in out for n in ("worker-a", "worker-b", "sleeper")),
    ),
    ("workers --all", lambda w: ["workers", "--all"], lambda w, out: "sleeper" in out),
    (
        "approvals",
        lambda w: ["approvals"],
        lambda w, out: "approval" in out and str(w.sc.gated_step) in out and "__pwned" in out,
    ),
    (
        "approvals --run",
        lambda w: ["approvals", "--run", str(w.sc.gated_run)],
        lambda w, out: str(w.sc.gated_step) in out and "__pwned" in out,
    ),
    (
        "approvals --run of a run without gates",
        lambda w: ["approvals", "--run", str(w.sleepy_run)],
        lambda w, out: out.strip() == "no approvals pending",
    ),
    (
        "dead-letters",
        lambda w: ["dead-letters"],
        lambda w, out: str(w.sc.dead_step) in out and "boom 2" in out,
    ),
    ("trace", lambda w: ["trace", str(w.sc.agent_step)], lambda w, out: "charged once" in out),
    (
        "export-dataset",
        lambda w: ["export-dataset"],
        lambda w, out: any("charged once" in line for line in out.splitlines() if line.startswith("{")),
    ),
    ("workspace show", lambda w: ["workspace", "show"], lambda w, out: "acme" in out and "globex" in out),
    ("schedule list", lambda w: ["schedule", "list"], lambda w, out: "no schedule" in out.lower()),
    (
        "db status",
        lambda w: ["db", "status"],
        lambda w, out: "server: PostgreSQL" in out and "schema:" in out,
    ),
    ("db url", lambda w: ["db", "url"], lambda w, out: "pgf_" in out),
]


@pytest.mark.parametrize("lane", ["operator", "reader"])
def test_every_read_command_works_as_an_operator_and_a_reader_login(world: World, lane: str) -> None:
    wrong = {}
    for name, args, shows in READS:
        out = ok(world, lane, *args(world))
        if not shows(world, out):
            wrong[name] = out
    assert not wrong, (lane, wrong)


@pytest.mark.parametrize("lane", ["operator", "reader"])
def test_the_json_of_workers_and_approvals_comes_from_the_read_functions(world: World, lane: str) -> None:
    workers = json.loads(ok(world, lane, "workers", "--json"))
    by_name = {w["name"]: w for w in workers}
    assert {"worker-a", "worker-b", "sleeper"} <= set(by_name)
    assert all(w["state"] == "alive" for w in workers)
    assert by_name["sleeper"]["holds"] == [], "a parked attempt holds no lease"
    gates = json.loads(ok(world, lane, "approvals", "--json"))
    assert [(g["step_id"], g["run_id"], g["gate_key"]) for g in gates] == [
        (world.sc.gated_step, world.sc.gated_run, "approval")
    ]
    assert json.loads(ok(world, lane, "approvals", "--run", str(world.sc.gated_run), "--json")) == gates


# --- writes: an operator's succeed, a reader's are refused ---------------------------------------


def test_an_operators_writes_succeed_and_warn_of_a_recipe_no_worker_serves(
    world: World, conn: psycopg.Connection[Any]
) -> None:
    sc = world.sc
    p = pgflight(world.dsn["operator"], "submit", "noop", "--workspace", "acme")
    assert p.returncode == 0, p.stderr
    assert re.search(r"\d+", p.stdout), p.stdout
    assert "no live worker serves recipe noop" in p.stderr, p.stderr
    quiet = pgflight(world.dsn["operator"], "submit", "gated", "--workspace", "acme")
    assert quiet.returncode == 0 and "no live worker" not in quiet.stderr, quiet.stderr
    assert "approve" in ok(world, "operator", "approve", str(sc.gated_step), "approve", "--note", "fine")
    ok(world, "operator", "retry", str(sc.dead_step), "--reason", "fixed")
    ok(world, "operator", "replay", str(sc.finished_step), "--reason", "again")
    ok(world, "operator", "cancel", str(world.sleepy_run), "--reason", "done sleeping")
    ok(world, "operator", "fork", str(sc.agent_step), "--at", "2", "--reason", "try again")
    ok(world, "operator", "workspace", "set", "acme", "--max-in-flight", "5")
    ok(world, "operator", "pause", "--workspace", "acme", "--reason", "maintenance")
    ok(world, "operator", "resume", "--workspace", "acme")
    ok(world, "operator", "schedule", "add", "acme", "nightly", "0 3 * * *", "noop")
    assert [r["name"] for r in json.loads(ok(world, "operator", "schedule", "list", "--json"))] == ["nightly"]
    ok(world, "operator", "schedule", "remove", "acme", "nightly")
    decided = conn.execute("select decision from pgflight.approvals where step_id = %s", [sc.gated_step])
    assert decided.fetchone() == ("approve",)
    status = conn.execute("select status from pgflight.run_status(%s)", [world.sleepy_run]).fetchone()
    assert status == ("cancelled",)


def test_a_readers_writes_are_refused_in_one_line_and_change_nothing(
    world: World, conn: psycopg.Connection[Any]
) -> None:
    sc = world.sc
    before = conn.execute("select count(*) from pgflight.events").fetchone()
    for args in (
        ["submit", "noop", "--workspace", "acme"],
        ["approve", str(sc.gated_step), "approve"],
        ["retry", str(sc.dead_step)],
        ["replay", str(sc.finished_step)],
        ["cancel", str(world.sleepy_run)],
        ["fork", str(sc.agent_step), "--at", "2", "--reason", "try again"],
        ["workspace", "set", "acme", "--max-in-flight", "5"],
        ["pause", "--workspace", "acme"],
        ["schedule", "add", "acme", "nightly", "0 3 * * *", "noop"],
    ):
        refused(world, "reader", *args)
    assert conn.execute("select count(*) from pgflight.events").fetchone() == before
    assert conn.execute("select count(*) from pgflight.approvals where decision is not null").fetchone() == (
        0,
    )


# --- the inspector's pages -----------------------------------------------------------------------

PAGES: list[tuple[Callable[[scenario.Scenario], str], str]] = [
    (lambda sc: "/runs", "gated"),
    (lambda sc: f"/runs/{sc.gated_run}", "approval"),
    (lambda sc: f"/steps/{sc.dead_step}", "boom 2"),
    (lambda sc: f"/steps/{sc.agent_step}/transcript", "charged once"),
    (lambda sc: f"/steps/{sc.agent_step}/diff", "diff"),
    (lambda sc: f"/whole/attempt/{sc.second_attempt}/result", "charged once"),
    (lambda sc: "/dead-letters", "boom 2"),
    (lambda sc: "/approvals", "send the contract"),
    (lambda sc: "/workers", "worker-a"),
    (lambda sc: "/queues", "acme"),
    (lambda sc: "/costs", "acme"),
    (lambda sc: "/metrics", "pgflight_"),
]


@pytest.mark.parametrize("lane", ["operator", "reader"])
def test_every_inspector_page_answers_as_an_operator_and_a_reader_login(
    world: World,
    lane: str,
    serve: Any,
) -> None:
    served: Served = serve(world.dsn[lane])
    parts = urlsplit(served.url)
    home = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    try:
        home.request("GET", "/")
        r = home.getresponse()
        assert (r.status, r.getheader("location")) == (307, "/runs"), (lane, r.status, r.read()[:500])
    finally:
        home.close()
    for path_of, phrase in PAGES:
        path = path_of(world.sc)
        c = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
        try:
            c.request("GET", path)
            r = c.getresponse()
            body = r.read().decode("utf-8", errors="replace")
        finally:
            c.close()
        assert r.status == 200, (lane, path, r.status, body[:2000])
        assert phrase in body, (lane, path, phrase, body[:2000])
        assert "permission denied" not in body, (lane, path)
