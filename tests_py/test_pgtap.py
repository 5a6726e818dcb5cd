"""The pgTAP suite (tests_sql/) runs green with pg_prove against a fresh clone of the template."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from conftest import Server
from pgflight.migrate import project_root


def test_pgtap_suite_passes(server: Server, dsn: str) -> None:
    tests = project_root() / "tests_sql"
    files = sorted(tests.rglob("*.sql"))
    assert files, f"no pgTAP tests found under {tests}"
    pg_prove = shutil.which("pg_prove")
    assert pg_prove, "pg_prove not found; run scripts/setup"
    with psycopg.connect(dsn, autocommit=True) as c:
        has_pgtap = c.execute("select 1 from pg_extension where extname = 'pgtap'").fetchone()
    assert has_pgtap, "the server has no pgTAP extension (apt: postgresql-V-pgtap)"

    params = conninfo_to_dict(dsn)
    env = {
        **os.environ,
        "PGHOST": str(params.get("host", "")),
        "PGPORT": str(params.get("port", "")),
        "PGUSER": str(params.get("user", "")),
        "PGDATABASE": str(params["dbname"]),
    }
    if params.get("password"):
        env["PGPASSWORD"] = str(params["password"])
    proc = subprocess.run(
        [
            pg_prove,
            "--psql-bin",
            str(Path(server.bindir) / "psql"),
            "--recurse",
            "--ext",
            ".sql",
            "--failures",
            "--comments",
            "tests_sql/",
        ],
        cwd=project_root(),
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, f"pg_prove failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    assert f"Files={len(files)}," in proc.stdout, proc.stdout
