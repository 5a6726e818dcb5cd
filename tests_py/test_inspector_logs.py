"""--log-format json: the worker's log and the CLI's failures as one JSON object per line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from typing import Any

import psycopg

from pgflight import db
from worker_support import one, wait_for, workers  # noqa: F401  (fixture)


def _json_lines(text: str) -> list[dict[str, Any]]:
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines, "no log lines"
    return [json.loads(line) for line in lines]  # every line parses


def test_a_worker_logs_json_lines(dsn: str, workers: Any) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        db.create_workspace(conn, "w")
        sub = db.submit_run(conn, "w", "fatal", {}, max_attempts=1)
        w = workers(dsn, recipes="pgflight_demo", env={"PGFLIGHT_LOG_FORMAT": "json"})
        wait_for(
            lambda: (
                one(conn, "select status from pgflight.step_status where step_id = %s", sub.step_id)
                == "dead_letter"
            ),
            30,
            "the step to be dead-lettered",
        )
    w.signal(signal.SIGTERM)
    assert w.wait(30) == 0
    records = _json_lines(w.output())
    assert all({"ts", "level", "logger", "message"} <= r.keys() for r in records)
    failed = [r for r in records if r["logger"] == "pgflight.worker" and "failed" in r["message"]]
    assert failed and failed[0]["level"] == "INFO" and "this recipe always fails" in failed[0]["message"]
    assert any(r["message"].startswith("worker") and r["message"].endswith("stopped") for r in records)


def _cli(dsn: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"PGFLIGHT_DSN": dsn}
    cmd = [sys.executable, "-m", "pgflight.cli", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)


def test_a_cli_failure_is_one_json_line(dsn: str) -> None:
    got = _cli(dsn, "--log-format", "json", "show", "424242")
    assert got.returncode == 4  # not found (the CLI's exit codes)
    (record,) = _json_lines(got.stderr)
    assert record["level"] == "ERROR" and record["logger"] == "pgflight.cli"
    assert "424242" in record["message"] and record["error_type"] == "NotFound"
    assert record["exit_code"] == 4
    bad = _cli(dsn, "--log-format", "yaml", "show", "1")
    assert bad.returncode == 2 and "log format must be one of text, json" in bad.stderr
