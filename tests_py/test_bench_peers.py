"""
The side-by-side benchmark's harness (bench/peers/harness.py) on pgflight alone, in a small run:
its own checks must pass, so a change that breaks the adapter protocol, the exactly-once check
or the counters shows here rather than in the next 15-minute benchmark run. The peers
themselves are not installed by the tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_harness_runs_pgflight_through_every_workload(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "peers" / "harness.py"),
            "--quick",
            "--systems=pgflight",
            "--jobs=300",
            "--rate=40",
            "--steady-s=2",
            "--children=60",
            f"--out={tmp_path}",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((tmp_path / "results.json").read_text())
    (pgflight,) = report["systems"]
    assert "error" not in pgflight
    burn, steady, fanout = pgflight["burn_down"], pgflight["steady"], pgflight["fanout"]
    for phase in (burn, steady, fanout):
        assert phase["exactly_once"], phase
    assert burn["ran"] == 300 and burn["pending_after"] == 0 and burn["jobs_per_s"] > 0
    assert burn["commits_per_job"] > 0 and burn["wal_bytes_per_job"] > 0
    assert steady["ran"] == 80 and steady["pending_after"] == 0
    assert steady["completions_timed"] == 80  # pgflight records each completion's time
    assert 0 < steady["enqueue_to_start"]["p50_ms"] <= steady["enqueue_to_complete"]["p99_ms"]
    assert fanout["continuations"] == 1 and fanout["ran"] == 60
    assert set(report["ceiling_tps"]) == {"1", "4", "16"}
    table = (tmp_path / "results.md").read_text()
    assert "| pgflight |" in table
