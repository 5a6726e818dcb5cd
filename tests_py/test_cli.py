"""
The ``pgflight`` command as a user meets it: every test runs the real CLI in a
subprocess against a real database and asserts the message and the exit code.

Exit codes: 0 done, 1 refused / not succeeded, 2 bad arguments, 3 no database or no schema,
4 not found, 5 done with input skipped, 130 / 143 interrupted.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgflight import db
from plan_support import latest_tag
from worker_support import HERE, WorkerProc, one, wait_for, worker_factory

workers = pytest.fixture(worker_factory)


def pgflight(
    dsn: str | None, *args: str, timeout_s: float = 60, cwd: Path | None = None, columns: int = 80
) -> subprocess.CompletedProcess[str]:
    """Run `pgflight ARGS` with PGFLIGHT_DSN=dsn (no tty); return the finished process."""
    env = dict(os.environ, COLUMNS=str(columns), PYTHONPATH=str(HERE))
    env.pop("PGFLIGHT_DSN", None)
    if dsn is not None:
        env["PGFLIGHT_DSN"] = dsn
    return subprocess.run(
        [sys.executable, "-m", "pgflight.cli", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def fails(proc: subprocess.CompletedProcess[str], code: int, *phrases: str) -> None:
    """The command exited `code` with one `error:` line naming `phrases`, and no traceback."""
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    for p in phrases:
        assert p in proc.stderr, (p, proc.stderr)


def submit(conn: psycopg.Connection[Any], recipe: str, inp: Any = None, **options: Any) -> int:
    db.create_workspace(conn, "default")
    return db.submit_run(conn, "default", recipe, inp or {}, options=options or None).run_id


# --- help for people -----------------------------------------------------------------------------

COMMANDS = [
    "migrate",
    "worker",
    "submit",
    "runs",
    "show",
    "events",
    "watch",
    "cancel",
    "approve",
    "retry",
    "replay",
    "workers",
    "approvals",
    "dead-letters",
    "trace",
    "export-dataset",
    "fork",
    "replay-agent",
    "review",
]


def test_help_pages_show_no_raw_type_names_and_say_the_exit_codes() -> None:
    top = pgflight(None, "--help")
    assert top.returncode == 0 and "Exit codes: 0 done" in top.stdout
    pages = {}
    for cmd in [*COMMANDS, "db status"]:
        page = pages[cmd] = pgflight(None, *cmd.split(), "--help")
        assert page.returncode == 0, (cmd, page.stderr)
        assert not re.search(r"<(bool|str|int|float)>|\{[a-z_]+\}", page.stdout), (cmd, page.stdout)
        assert all(len(line) <= 80 for line in page.stdout.splitlines()), (cmd, page.stdout)
    assert "[default: 4" in pages["worker"].stdout
    assert "130 / 143 interrupted" in pages["review"].stdout


# --- 1: a worker runs exactly the recipes it was given -------------------------------------------


def test_worker_serves_only_the_recipes_of_the_modules_named(
    dsn: str, conn: psycopg.Connection[Any], workers: Callable[..., WorkerProc]
) -> None:
    """`--recipes worker_recipes` declares that module's recipes only: no demo, review or agent."""
    from worker_recipes import __name__ as _  # noqa: F401  (the module exists on PYTHONPATH)

    w = workers(dsn, recipes="worker_recipes")
    names = wait_for(
        lambda: one(conn, "select recipes from pgflight.workers where pid = %s", w.pid), 30, "registration"
    )
    assert "charge" in names
    assert not {"noop", "fanout", "review_library", "review_document", "agent"} & set(names)
    run = submit(conn, "noop")
    time.sleep(1.0)  # the worker would have claimed it by now if it served noop
    assert one(conn, "select status from pgflight.step_status where run_id = %s", run) == "queued"
    shown = pgflight(dsn, "show", str(run))
    assert shown.returncode == 0, shown.stderr
    assert "queued" in shown.stdout
    assert "no live worker serves recipe noop" in shown.stderr


@pytest.mark.parametrize(
    ("args", "phrases"),
    [
        (["--recipes", "json"], ["module json defines no recipe"]),
        (["--recipes", "no_such_module_here"], ["cannot import a recipe module", "no_such_module_here"]),
        (
            ["--recipes", "pgflight_demo", "--concurrency", "0"],
            ["--concurrency", "greater than or equal to 1"],
        ),
        (["--recipes", "pgflight_demo", "--log-level", "bogus"], ["--log-level", "bogus"]),
    ],
    ids=["no-recipes", "missing-module", "concurrency-0", "log-level"],
)
def test_worker_refuses_bad_arguments_in_one_line(dsn: str, args: list[str], phrases: list[str]) -> None:
    fails(pgflight(dsn, "worker", *args), 2, *phrases)


def test_a_claimed_step_of_an_unknown_recipe_is_released_not_dead_lettered(
    dsn: str, conn: psycopg.Connection[Any], caplog: pytest.LogCaptureFixture
) -> None:
    """
    A worker whose registry claims a name it cannot run (a registry changed under it) hands the
    step back with release_step: still attempt 1, no failed attempt, the release in the events.
    """
    import threading

    from pgflight.recipes import Registry
    from pgflight.worker import Worker

    class Lying(Registry):
        def names(self) -> list[str]:
            return [*super().names(), "ghost"]

    reg = Lying()
    reg.add("real", lambda ctx: None)
    run = submit(conn, "ghost")
    w = Worker(dsn, reg, concurrency=1, lease_s=5, poll_s=0.1, listen=False, name="liar")
    t = threading.Thread(target=w.run, daemon=True)
    with caplog.at_level("ERROR", logger="pgflight"):
        t.start()
        wait_for(
            lambda: one(
                conn,
                "select count(*) from pgflight.run_events where run_id = %s and to_status = 'queued'"
                " and from_status is not null",
                run,
            ),
            20,
            "the release",
        )
        w.stop()
        t.join(20)
    row = conn.execute(
        "select status, attempt_no, failed_attempts from pgflight.step_status where run_id = %s", [run]
    ).fetchone()
    assert row == ("queued", 1, 0)
    assert any("not served by this worker" in r.getMessage() for r in caplog.records)


# --- 3 and 4: one-line errors, checked before anything is submitted ------------------------------


def test_review_checks_out_and_paths_before_submitting(
    dsn: str, conn: psycopg.Connection[Any], tmp_path: Path
) -> None:
    a_file = tmp_path / "report.txt"
    a_file.write_text("not a folder")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "LICENSE").write_text("Permission is hereby granted, free of charge.\n")
    fails(pgflight(dsn, "review", str(docs), "--out", str(a_file)), 2, f"--out {a_file} is a file")
    fails(
        pgflight(dsn, "review", str(tmp_path / "typo"), "--out", str(tmp_path / "o")),
        2,
        "no such file or directory",
        "typo",
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    fails(pgflight(dsn, "review", str(empty), "--out", str(tmp_path / "o")), 2, "no document to review")
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "blob.bin").write_bytes(bytes(range(256)) * 4)
    (junk / "gone").symlink_to(junk / "nowhere")
    fails(
        pgflight(dsn, "review", str(junk), "--out", str(tmp_path / "o"), timeout_s=120),
        2,
        "no document to review: 2 skipped",
        "binary",
        "dangling symlink",
    )
    assert one(conn, "select count(*) from pgflight.runs") == 0


def test_export_dataset_into_a_missing_folder_is_one_line(dsn: str, tmp_path: Path) -> None:
    target = tmp_path / "missing" / "x.jsonl"
    fails(pgflight(dsn, "export-dataset", "-o", str(target)), 2, "does not exist")


# --- 7: bad filters, hints, the database used ----------------------------------------------------


def test_bad_filter_values_exit_2(dsn: str, conn: psycopg.Connection[Any]) -> None:
    fails(pgflight(dsn, "runs", "--status", "bogus"), 2, "--status", "bogus")
    fails(pgflight(dsn, "dead-letters", "-n", "0"), 2, "greater than or equal to 1")
    fails(pgflight(dsn, "events", "1", "--since", "yesterday-ish"), 2, "--since")
    fails(pgflight(dsn, "submit", "noop", "{not json"), 2, "INPUT is not JSON")
    fails(pgflight(dsn, "approve", "1", "maybe"), 2, "maybe")
    fails(pgflight(dsn, "show", "424242"), 4, "424242", "[ZF003]")


def test_hints_name_cli_commands(dsn: str, conn: psycopg.Connection[Any]) -> None:
    run = submit(conn, "noop")
    step = one(conn, "select root_step_id from pgflight.runs where id = %s", run)
    proc = pgflight(dsn, "retry", str(step), "--reason", "try again")
    fails(proc, 1, "[ZF006]", "hint:")
    hint = next(line for line in proc.stderr.splitlines() if line.startswith("hint:"))
    assert not re.search(r"\b[a-z_]+\(", hint), hint  # no SQL function call in the hint


def test_a_database_without_the_schema_says_run_migrate(empty_dsn: str) -> None:
    fails(pgflight(empty_dsn, "runs"), 3, "no pgflight schema", "pgflight migrate")


def test_verbose_and_db_status_name_the_database(dsn: str) -> None:
    dbname = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
    proc = pgflight(dsn, "-v", "runs")
    assert proc.returncode == 0, proc.stderr
    assert "database: PGFLIGHT_DSN: " in proc.stderr and f"/{dbname}" in proc.stderr
    st = pgflight(dsn, "db", "status")
    assert st.returncode == 0, st.stderr
    assert st.stdout.startswith("database: PGFLIGHT_DSN: ") and f"/{dbname}" in st.stdout
    assert "changes deployed" in st.stdout
    assert f"schema: release {latest_tag()}" in st.stdout  # the release the database runs, by its tag


def test_no_database_is_exit_3(tmp_path: Path) -> None:
    fails(pgflight("postgresql://nobody@127.0.0.1:1/none", "runs"), 3, "cannot reach the database")
    proc = pgflight(None, "runs", cwd=tmp_path)  # no PGFLIGHT_DSN and no embedded cluster here
    fails(proc, 3, "the database is not running", "pgflight db up")


# --- 8: migrate, submit options, --reason, plurals -----------------------------------------------


def test_migrate_says_pg_cron_once_plainly(empty_dsn: str) -> None:
    proc = pgflight(empty_dsn, "migrate", timeout_s=180)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("pg_cron") == 1, proc.stdout  # said once
    (line,) = [ln for ln in proc.stdout.splitlines() if "pg_cron" in ln]
    assert line.count("(") - line.count("()") <= 1, line  # no advice nested in brackets
    assert "run_sweeps()" in line and line.count("run_sweeps") == 1, line


def test_submit_options_and_reasons(dsn: str, conn: psycopg.Connection[Any]) -> None:
    proc = pgflight(
        dsn,
        "submit",
        "noop",
        '{"a": 1}',
        "--priority",
        "5",
        "--delay",
        "120",
        "--max-attempts",
        "2",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    run = json.loads(proc.stdout)["run_id"]
    row = conn.execute(
        "select s.priority, s.max_attempts, a.available_after > now() + interval '100 seconds'"
        "  from pgflight.steps s join pgflight.step_attempts a on a.step_id = s.id where s.run_id = %s",
        [run],
    ).fetchone()
    assert row == (5, 2, True)
    assert "no live worker serves recipe noop" in proc.stderr
    shown = pgflight(dsn, "show", str(run))
    assert "waiting (delay)" in shown.stdout, shown.stdout
    runs = pgflight(dsn, "runs")
    assert "waiting (delay)" in runs.stdout
    cancel = pgflight(dsn, "cancel", str(run), "--reason", "wrong input")
    assert cancel.returncode == 0, cancel.stderr
    assert f"run {run} cancelled: 1 attempt cancelled, 0 running attempts asked to stop" in cancel.stdout
    assert (
        one(
            conn,
            "select count(*) from pgflight.run_events where run_id = %s and detail::text like %s",
            run,
            "%wrong input%",
        )
        >= 1
        or one(
            conn,
            "select count(*) from pgflight.run_events where run_id = %s and reason like %s",
            run,
            "%wrong input%",
        )
        >= 1
    )


# --- 5: stuck work visible -----------------------------------------------------------------------


def _claim(conn: psycopg.Connection[Any], name: str, recipes: list[str]) -> tuple[int, Any]:
    w = db.register_worker(conn, name, recipes=recipes)
    claims = db.claim_batch(conn, w, batch_size=1, lease_s=30, recipes=recipes)
    assert claims, "nothing to claim"
    return w, claims[0]


def test_backoff_last_error_and_workers_are_shown(dsn: str, conn: psycopg.Connection[Any]) -> None:
    run = submit(conn, "flaky", {}, backoff={"base_s": 300, "factor": 1, "max_s": 300})
    w, c = _claim(conn, "w-test", ["flaky"])
    db.fail_step(conn, c.attempt_id, c.fencing_token, {"message": "connection refused by model"})
    shown = pgflight(dsn, "show", str(run))
    assert shown.returncode == 0, shown.stderr
    assert "waiting (backoff)" in shown.stdout
    assert "last error: connection refused by model" in " ".join(shown.stdout.split())  # tree may wrap
    watch = pgflight(dsn, "watch", str(run), "--timeout", "1", "--interval", "0.2")
    fails(watch, 1, "still waiting (backoff)")
    assert "last error: connection refused by model" in watch.stderr  # no terminal: plain lines
    assert f"run {run} waiting (backoff): 0/1 step done" in watch.stderr
    # a second run, held by a worker that then goes quiet
    held = submit(conn, "flaky")
    _, c2 = _claim(conn, "w-quiet", ["flaky"])
    conn.execute(
        "update pgflight.workers set last_seen_at = now() - interval '5 minutes' where name = 'w-quiet'"
    )
    listing = pgflight(dsn, "workers", columns=100)
    assert listing.returncode == 0, listing.stderr
    quiet = next(ln for ln in listing.stdout.splitlines() if "w-quiet" in ln)
    assert "stale" in quiet and f"1: {c2.step_id}" in quiet and "5 min" in quiet
    assert "alive" in next(ln for ln in listing.stdout.splitlines() if "w-test" in ln)
    assert pgflight(dsn, "runs").stdout.count("running") >= 1
    del held, w


def test_approvals_are_listed_and_the_state_says_approval(dsn: str, conn: psycopg.Connection[Any]) -> None:
    run = submit(conn, "gated")
    _, c = _claim(conn, "w-gate", ["gated"])
    db.request_approval(conn, c.attempt_id, c.fencing_token, "publish", request={"summary": "ship it"})
    listing = pgflight(dsn, "approvals")
    assert listing.returncode == 0, listing.stderr
    assert "publish" in listing.stdout and str(c.step_id) in listing.stdout and "ship it" in listing.stdout
    shown = pgflight(dsn, "show", str(run))
    assert "waiting (approval)" in shown.stdout
    assert f"pgflight approve {c.step_id} approve" in shown.stdout
    assert "waiting (approval)" in pgflight(dsn, "runs").stdout
    fails(pgflight(dsn, "approve", str(c.step_id), "approve", "--payload", "{nope"), 2, "not JSON")
    ok = pgflight(dsn, "approve", str(c.step_id), "approve", "--note", "fine", "--payload", '{"to": "depot"}')
    assert ok.returncode == 0, ok.stderr
    assert pgflight(dsn, "approvals").stdout.strip() == "no approvals pending"
    decided = conn.execute("select decision, payload from pgflight.approvals where step_id = %s", [c.step_id])
    assert decided.fetchone() == ("approve", {"to": "depot"})


# --- 6: events as a tool ------------------------------------------------------------------------


@pytest.fixture
def busy_run(conn: psycopg.Connection[Any]) -> Iterator[tuple[int, int]]:
    """A run whose step was claimed and released 30 times: 60-odd events."""
    run = submit(conn, "noop")
    w = db.register_worker(conn, "pager", recipes=["noop"])
    for _ in range(30):
        (c,) = db.claim_batch(conn, w, batch_size=1, lease_s=30, recipes=["noop"])
        db.release_step(conn, c.attempt_id, c.fencing_token, reason="paging test")
    yield run, one(conn, "select count(*) from pgflight.run_events where run_id = %s", run)


def test_events_newest_last_with_paging_and_filters(dsn: str, busy_run: tuple[int, int]) -> None:
    run, total = busy_run
    assert total > 60
    proc = pgflight(dsn, "events", str(run), "-n", "10")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert all(len(ln) <= 80 for ln in lines), lines
    m = re.search(r"(\d+) earlier events \(see them with --before (\d+)\)", proc.stdout)
    assert m and int(m.group(1)) == total - 10
    ids = [int(ln.split()[0]) for ln in lines if re.match(r"^\s*\d+\s+\d\d:", ln)]
    assert len(ids) == 10 and ids == sorted(ids)  # newest last, one line each
    page = json.loads(pgflight(dsn, "events", str(run), "-n", "5", "--before", m.group(2), "--json").stdout)
    assert [e["id"] for e in page["events"]] == sorted(e["id"] for e in page["events"])
    assert page["events"][-1]["id"] < int(m.group(2)) and page["earlier"] == total - 15
    step = json.loads(pgflight(dsn, "events", str(run), "--json", "-n", "1000").stdout)["events"][0][
        "step_id"
    ]
    by_step = json.loads(
        pgflight(dsn, "events", str(run), "--step", str(step), "--json", "-n", "1000").stdout
    )
    assert by_step["events"] and all(e["step_id"] == step for e in by_step["events"])
    future = pgflight(dsn, "events", str(run), "--since", "2999-01-01T00:00")
    assert future.returncode == 0 and "no events match" in future.stdout
    recent = json.loads(pgflight(dsn, "events", str(run), "--since", "1h", "--json", "-n", "1000").stdout)
    assert len(recent["events"]) == total


def test_events_follow_prints_new_events_until_the_run_ends(
    dsn: str, conn: psycopg.Connection[Any], busy_run: tuple[int, int]
) -> None:
    run, _ = busy_run
    env = dict(os.environ, PGFLIGHT_DSN=dsn, COLUMNS="80")
    follower = subprocess.Popen(
        [sys.executable, "-m", "pgflight.cli", "events", str(run), "-n", "3", "--follow"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(1.5)
    db.cancel_run(conn, run, actor="test", reason="follow me")
    out, err = follower.communicate(timeout=30)
    assert follower.returncode == 0, err
    assert "cancelled" in out.splitlines()[-1], out


def test_a_parent_waits_for_children_and_the_run_is_queued_for_them(
    dsn: str, conn: psycopg.Connection[Any]
) -> None:
    run = submit(conn, "fanout")
    _, c = _claim(conn, "w-parent", ["fanout"])
    db.spawn_children(
        conn, c.attempt_id, c.fencing_token, [{"key": "a", "recipe": "square", "input": {"x": 2}}]
    )
    shown = pgflight(dsn, "show", str(run))
    assert shown.returncode == 0, shown.stderr
    assert f"run {run} fanout queued" in shown.stdout  # the child waits for a worker
    assert "waiting (children)" in shown.stdout
    assert "no live worker serves recipe square" in shown.stderr


def test_an_operator_retry_past_max_attempts_is_shown_as_a_retry_not_3_of_2(
    dsn: str, conn: psycopg.Connection[Any]
) -> None:
    run = submit(conn, "flaky", {}, max_attempts=1)
    _, c = _claim(conn, "w-retry", ["flaky"])
    db.fail_step(conn, c.attempt_id, c.fencing_token, {"message": "bad"}, retryable=False)
    db.retry_step(conn, c.step_id, note="fixed the input")
    shown = pgflight(dsn, "show", str(run), columns=200)
    assert shown.returncode == 0, shown.stderr
    assert "attempt 2 (1 + retried)" in shown.stdout, shown.stdout
    assert "attempt 2/1" not in shown.stdout
