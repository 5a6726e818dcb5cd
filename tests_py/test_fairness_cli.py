"""
The flow-control CLI: `pgflight workspace` (limits, share, pause), `pgflight pause` /
`resume`, `pgflight schedule` (add, list, remove), `pgflight limits`, and the caps in
`pgflight show`; run as a real process against a test database (PGFLIGHT_DSN).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from core_helpers import Conn, scalar, submit
from test_fairness import workspace


def cli(dsn: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PGFLIGHT_DSN": dsn, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "pgflight.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_workspace_limits_pause_and_show(conn: Conn, dsn: str) -> None:
    workspace(conn, "acme")
    run = submit(conn, "noop", workspace="acme")
    r = cli(dsn, "workspace", "set", "acme", "--max-in-flight", "3", "--share", "2", "--rate", "5")
    assert r.returncode == 0, r.stderr
    assert "max in flight 3, share 2, rate 5.0/s (burst 5.0)" in r.stdout
    r = cli(dsn, "pause", "--workspace", "acme", "--note", "migration")
    assert r.returncode == 0 and "workspace acme paused" in r.stdout, r
    shown = json.loads(cli(dsn, "workspace", "show", "acme", "--json").stdout)
    assert shown[0]["max_in_flight"] == 3 and shown[0]["paused_by"] == "postgres" and shown[0]["queued"] == 1
    r = cli(dsn, "show", str(run.run_id))
    assert r.returncode == 0 and "workspace acme: in flight 0 of 3, share 2, rate 5.0/s" in r.stdout, r.stdout
    assert "paused" in r.stdout
    assert cli(dsn, "resume", "--workspace", "acme").returncode == 0
    assert scalar(conn, "select paused_at from pgflight.workspace_limits") is None
    r = cli(dsn, "workspace", "set", "acme", "--remove", "max-in-flight")
    assert r.returncode == 0 and "max in flight -" in r.stdout, r
    r = cli(dsn, "workspace", "set", "acme", "--share", "0")
    assert r.returncode == 2 and "share is out of range" in r.stderr, r  # 22023: bad arguments


def test_recipe_pause_and_rate(conn: Conn, dsn: str) -> None:
    assert cli(dsn, "pause", "--recipe", "send_email").returncode == 0
    assert (
        scalar(conn, "select paused_by from pgflight.recipe_limits where recipe = 'send_email'") == "postgres"
    )
    r = cli(dsn, "limits", "--recipe", "send_email", "--rate", "2", "--max-in-flight", "100")
    assert r.returncode == 0 and "rate 2.0/s" in r.stdout and "global max in flight: 100" in r.stdout, r
    assert cli(dsn, "pause").returncode != 0  # neither --workspace nor --recipe


def test_schedule_add_list_remove(conn: Conn, dsn: str) -> None:
    workspace(conn, "acme")
    r = cli(
        dsn,
        "schedule",
        "add",
        "acme",
        "nightly",
        "0 30 2 * * *",
        "report",
        "--tz",
        "Europe/Paris",
        "--input",
        '{"a": 1}',
    )
    assert r.returncode == 0 and "next firing" in r.stdout, r
    listed = json.loads(cli(dsn, "schedule", "list", "--json").stdout)
    assert [(s["name"], s["cron"], s["time_zone"], s["overlap"]) for s in listed] == [
        ("nightly", "0 30 2 * * *", "Europe/Paris", "skip")
    ]
    r = cli(dsn, "schedule", "add", "acme", "bad", "61 * * * *", "report")
    assert r.returncode == 2 and "cron minute field" in r.stderr, r  # 22023: bad arguments
    assert cli(dsn, "schedule", "remove", "acme", "nightly").returncode == 0
    assert cli(dsn, "schedule", "remove", "acme", "nightly").returncode == 4  # not found
    assert scalar(conn, "select count(*) from pgflight.schedules") == 0
