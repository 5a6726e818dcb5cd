"""
The CLI's listings at an 80-column terminal, with the ids a database has after a while (seven
digits), and the one name of the "why" option across the operator commands.

Left to itself, rich shrinks every column alike when a table was wider than the
terminal: at 80 columns ``events`` would print ids as ``26…``, ``dead-letters`` step ids as
``26…``, and ``workers --all`` would wrap "last seen" over five lines. An id cut short cannot be copied into
the next command (``pgflight retry STEP``), so ids, counts, states and times must come out whole,
one line per row; only names, recipes and free text are cut (with an ellipsis).
"""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from pgflight import db
from test_cli import pgflight

BIG = 7_654_321  # every id and token the database gives from here on has seven digits


@pytest.fixture
def big_ids(conn: psycopg.Connection[Any]) -> psycopg.Connection[Any]:
    """The test database with every pgflight sequence moved to seven-digit values."""
    conn.execute(
        "select setval(format('%%I.%%I', schemaname, sequencename)::regclass, %s)"
        " from pg_sequences where schemaname = 'pgflight'",
        [BIG],
    )
    db.create_workspace(conn, "default")
    return conn


def _lines(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if ln.strip()]


def _row(out: str, first: str) -> list[str]:
    """The cells (split on runs of spaces) of the one line whose first cell is `first`."""
    found = [ln.split() for ln in out.splitlines() if ln.split()[:1] == [first]]
    assert len(found) == 1, (first, out)
    return found[0]


def _shown(dsn: str, *args: str) -> str:
    proc = pgflight(dsn, *args, columns=80)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert "…" not in "".join(ln.split()[0] for ln in _lines(proc.stdout) if ln.split())
    assert all(len(ln) <= 80 for ln in proc.stdout.splitlines()), proc.stdout
    return proc.stdout


def test_ids_counts_and_times_are_whole_at_80_columns(dsn: str, big_ids: psycopg.Connection[Any]) -> None:
    """events, dead-letters, workers --all, runs and approvals at 80 columns: each row one line,
    its ids whole (the line starts with the id and names the others), only long text cut."""
    c = big_ids
    long_recipe = "summarize_the_quarterly_contracts_of_every_department_for_legal"
    dead = db.submit_run(c, "default", long_recipe, {}, options={"max_attempts": 1})
    gated = db.submit_run(c, "default", "gated", {})
    w = db.register_worker(
        c, "worker-with-a-rather-long-name@host.example.org", recipes=[long_recipe, "gated"] * 3
    )
    (held,) = db.claim_batch(c, w, batch_size=1, lease_s=30, recipes=[long_recipe])
    db.fail_step(c, held.attempt_id, held.fencing_token, {"message": "the contract store said 503 " * 5})
    (gate,) = db.claim_batch(c, w, batch_size=1, lease_s=30, recipes=["gated"])
    db.request_approval(c, gate.attempt_id, gate.fencing_token, "publish", request={"summary": "x" * 200})
    c.execute("select pgflight.deregister_worker(%s)", [w])

    events = _shown(dsn, "events", str(dead.run_id))
    first_event = int(
        c.execute("select min(id) from pgflight.run_events where run_id = %s", [dead.run_id]).fetchone()[0]
    )
    assert first_event > BIG
    row = _row(events, str(first_event))  # the id whole, in the first cell
    assert str(dead.step_id) in row

    letters = _shown(dsn, "dead-letters")
    assert str(dead.run_id) in _row(letters, str(dead.step_id))

    workers = _shown(dsn, "workers", "--all")
    row = _row(workers, str(w))
    assert "stopped" in row and "ago" in row  # "last seen" whole on the worker's line

    runs = _shown(dsn, "runs")
    assert "failed" in _row(runs, str(dead.run_id))
    assert "waiting" in " ".join(_row(runs, str(gated.run_id)))

    approvals = _shown(dsn, "approvals")
    assert str(gated.run_id) in _row(approvals, str(gate.step_id))


def test_events_show_every_state_change_whole_at_80_columns(
    dsn: str, big_ids: psycopg.Connection[Any]
) -> None:
    c = big_ids
    w = db.register_worker(c, "w", recipes=["slow"])
    sub = db.submit_run(c, "default", "slow", {}, options={"max_attempts": 2})
    (held,) = db.claim_batch(c, w, batch_size=1, lease_s=30, recipes=["slow"])
    db.start_step(c, held.attempt_id, held.fencing_token)
    db.cancel_run(c, sub.run_id)  # running -> cancel_requested, then the worker acknowledges it
    db.release_step(c, held.attempt_id, held.fencing_token)
    out = _shown(dsn, "events", str(sub.run_id))
    changes = c.execute(
        "select from_status, to_status from pgflight.run_events where run_id = %s and to_status is not null",
        [sub.run_id],
    ).fetchall()
    assert ("cancel_requested", "cancelled") in changes
    for before, after in changes:
        assert f"{before or ''} → {after}".strip() in out, (before, after, out)


def test_show_names_children_spawned_by_content_hash_by_the_name_their_result_gives(
    dsn: str, big_ids: psycopg.Connection[Any]
) -> None:
    c = big_ids
    w = db.register_worker(c, "w", recipes=["parent", "doc"])
    sub = db.submit_run(c, "default", "parent", {})
    (root,) = db.claim_batch(c, w, batch_size=1, lease_s=30, recipes=["parent"])
    key = "3f786850e387550fdab836ed7e6dc881de23001b"  # a SHA-1, as a spawn keyed by content makes
    db.spawn_children(c, root.attempt_id, root.fencing_token, [{"key": key, "recipe": "doc", "input": {}}])
    (doc,) = db.claim_batch(c, w, batch_size=1, lease_s=30, recipes=["doc"])
    path = "/usr/share/doc/libexample-tools/copyright"
    db.complete_step(c, doc.attempt_id, doc.fencing_token, {"path": path, "findings": 3})
    out = _shown(dsn, "show", str(sub.run_id))
    line = next(ln for ln in out.splitlines() if f"step {doc.step_id}" in ln)
    assert path in line and key not in line, out


def test_workspace_show_names_the_workspace_and_who_paused_it(
    dsn: str, big_ids: psycopg.Connection[Any]
) -> None:
    """Ten columns at 80: the workspace name whole; the pause (when, by whom) on a line below."""
    db.create_workspace(big_ids, "billing-eu")
    db.submit_run(big_ids, "billing-eu", "noop", {})
    assert pgflight(dsn, "pause", "--workspace", "billing-eu", "--reason", "migration").returncode == 0
    shown = _shown(dsn, "workspace", "show")
    row = _row(shown, "billing-eu")
    assert row[-1] == "yes" and "1" in row  # paused; one queued
    assert "no" not in _row(shown, "default")
    assert any(ln.startswith("workspace billing-eu paused ") for ln in shown.splitlines()), shown


def test_reason_names_the_why_of_every_operator_command(dsn: str, big_ids: psycopg.Connection[Any]) -> None:
    """cancel, retry and replay took --reason; approve, pause and resume only --note. Each now
    takes --reason (and --note, as before), and the reason lands with the decision."""
    c = big_ids
    run = db.submit_run(c, "default", "gated", {})
    w = db.register_worker(c, "w", recipes=["gated"])
    (gate,) = db.claim_batch(c, w, batch_size=1, lease_s=30, recipes=["gated"])
    db.request_approval(c, gate.attempt_id, gate.fencing_token, "publish")
    ok = pgflight(dsn, "approve", str(gate.step_id), "approve", "--reason", "the figures check out", "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["decision"] == "approve"
    note = c.execute("select note from pgflight.approvals where step_id = %s", [gate.step_id]).fetchone()
    assert note is not None and note[0].startswith("the figures check out"), note
    for args in (("pause", "--workspace", "default"), ("resume", "--workspace", "default")):
        for option in ("--reason", "--note"):
            proc = pgflight(dsn, *args, option, f"{args[0]} by {option}")
            assert proc.returncode == 0, (args, option, proc.stderr)
    proc = pgflight(dsn, "workspace", "pause", "default", "--reason", "x")
    assert proc.returncode == 0, proc.stderr
    del run
