"""
`pgflight review` owns its workers: SIGTERM or SIGINT stops them (each in its
own process group), the command says which run it left and that the same command continues it,
and the same command then finishes that run.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

DATA = Path(__file__).parent / "data" / "licenses"


def library(folder: Path, n: int) -> Path:
    """`n` distinct text documents (copies of GPL-3, each with its own first line)."""
    folder.mkdir()
    text = (DATA / "GPL-3").read_bytes()
    for i in range(n):
        (folder / f"doc-{i:03d}.txt").write_bytes(f"Copy {i}\n".encode() + text)
    return folder


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_the_workers_and_the_same_command_continues_the_run(
    dsn: str, tmp_path: Path, sig: signal.Signals
) -> None:
    docs = library(tmp_path / "docs", 120)
    args = [
        sys.executable,
        "-m",
        "pgflight.cli",
        "review",
        str(docs),
        "--workers",
        "2",
        "--out",
        str(tmp_path / "o"),
    ]
    env = dict(os.environ, PGFLIGHT_DSN=dsn, COLUMNS="120")
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with psycopg.connect(dsn, autocommit=True) as conn:
        deadline = time.monotonic() + 90
        pids: list[int] = []
        while time.monotonic() < deadline and len(pids) < 2:
            pids = [
                r[0]
                for r in conn.execute(
                    "select pid from pgflight.workers where stopped_at is null and name like 'review-%%'"
                ).fetchall()
            ]
            time.sleep(0.1)
        assert len(pids) == 2, "the review's workers did not register"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 128 + sig, (proc.returncode, out, err)
        assert "Traceback" not in err, err
        m = re.search(r"run (\d+) is left unfinished", err)
        assert m, err
        assert "Run the same command again to continue it" in err
        run_id = int(m.group(1))
        time.sleep(0.5)
        assert not [p for p in pids if alive(p)], "a worker outlived the command"
        status = conn.execute("select status from pgflight.runs where id = %s", [run_id]).fetchone()
        assert status == ("running",)

        again = subprocess.run(args, env=env, capture_output=True, text=True, timeout=240, check=False)
        assert again.returncode == 0, (again.stdout, again.stderr)  # every document reviewed, none skipped
        assert f"run {run_id} continued" in again.stderr
        # a pipe gets plain progress lines, each saying something new (the last was printed twice)
        progress = [
            re.sub(r" · [\d.,]+ docs/s", "", line)
            for line in again.stderr.splitlines()
            if line.startswith("reviewed ")
        ]
        assert progress and progress[-1].startswith("reviewed 120/120 "), again.stderr
        assert len(progress) == len(set(progress)), again.stderr
        assert conn.execute("select status from pgflight.runs where id = %s", [run_id]).fetchone() == (
            "succeeded",
        )
