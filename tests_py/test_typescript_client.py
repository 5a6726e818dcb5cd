"""
The TypeScript worker library (clients/typescript) beyond the conformance suite: its own unit tests
(node:test, one of them against this database as a worker-lane login), and a method for every SQL
function the worker lane may execute, read from the catalogue.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import psycopg

from clients_support import CLIENTS_DIR, TS_DIR, require
from security_support import api_functions, grant

LOGIN = "pgf_worker_a"


def test_the_librarys_own_unit_tests_pass_against_this_database(dsn: str, logins: Any) -> None:
    require("typescript")
    with psycopg.connect(dsn, autocommit=True) as su:
        su.execute("select pgflight.create_workspace('ts-unit')")
        grant(su, LOGIN, "ts-unit", "worker")
        su.execute("""select pgflight.submit_run('ts-unit', 'ts_unit', '[1, "two", {"three": 3}]'::jsonb)""")
    env = dict(os.environ, PGFLIGHT_TEST_WORKER_DSN=logins.dsn(LOGIN, dsn))
    p = subprocess.run(
        ["node", "--test", "dist/test/"], cwd=TS_DIR, env=env, capture_output=True, text=True, timeout=120
    )
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-4000:]
    assert "# fail 0" in out and "# skipped 0" in out, out[-2000:]


def test_the_client_has_a_method_for_every_worker_lane_function(conn: psycopg.Connection[Any]) -> None:
    require("typescript")
    script = (
        "import('./dist/src/index.js').then(m => console.log(JSON.stringify({"
        " functions: m.WORKER_FUNCTIONS,"
        " methods: Object.getOwnPropertyNames(m.PgflightClient.prototype)})))"
    )
    p = subprocess.run(["node", "-e", script], cwd=TS_DIR, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    lane = {name for name in api_functions(conn, "pgflight_worker") if not name.startswith("_")}
    assert set(got["functions"]) == lane, (
        "clients/typescript/src/client.ts WORKER_FUNCTIONS and the catalogue differ"
    )
    missing = [m for m in got["functions"].values() if m not in got["methods"]]
    assert missing == [], f"WORKER_FUNCTIONS names methods PgflightClient lacks: {missing}"


def test_without_node_the_typescript_cases_are_skipped_with_the_reason(tmp_path: Path) -> None:
    """The client's check script, on a PATH where bash is and node is not, says why it cannot run."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    bash = shutil.which("bash")
    assert bash is not None
    (bin_dir / "bash").symlink_to(bash)
    for tool in ("dirname",):
        found = shutil.which(tool)
        assert found is not None
        (bin_dir / tool).symlink_to(found)
    p = subprocess.run(
        [bash, str(CLIENTS_DIR / "typescript" / "check")],
        env={"PATH": str(bin_dir)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert p.returncode == 1
    assert "node is not installed" in p.stdout
