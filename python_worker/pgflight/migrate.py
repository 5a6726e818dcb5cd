"""
Schema migrations: sqitch, run from the checkout that holds `sqitch.plan`.

`deploy(dsn)` is `sqitch deploy --verify`, `revert(dsn)` is `sqitch revert -y`, both against the
database a libpq DSN names. The password and TLS settings travel in the environment, never on a
command line.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from datetime import datetime
from pathlib import Path
from urllib.parse import quote

from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pgflight.embedded import find_bindir, source_root

# conninfo keyword -> libpq environment variable, for what a sqitch URI cannot carry.
_ENV_OF = {
    "password": "PGPASSWORD",
    "passfile": "PGPASSFILE",
    "sslmode": "PGSSLMODE",
    "sslrootcert": "PGSSLROOTCERT",
    "sslcert": "PGSSLCERT",
    "sslkey": "PGSSLKEY",
    "sslcrl": "PGSSLCRL",
    "connect_timeout": "PGCONNECT_TIMEOUT",
    "options": "PGOPTIONS",
    "application_name": "PGAPPNAME",
    "target_session_attrs": "PGTARGETSESSIONATTRS",
    "service": "PGSERVICE",
}


class MigrationError(RuntimeError):
    """sqitch failed; `output` holds everything it printed."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


def project_root() -> Path:
    """The directory holding sqitch.plan (python_worker/pgflight/../../)."""
    root = source_root()
    if not (root / "sqitch.plan").exists():
        raise MigrationError(f"sqitch.plan not found in {root}; run pgflight from a checkout of pgflight")
    return root


def sqitch_target(dsn: str) -> tuple[str, dict[str, str]]:
    """
    Turn a libpq DSN (URL or key=value) into a sqitch target URI and the environment it needs.

    >>> sqitch_target("postgresql://app:secret@db:5433/pgflight")
    ('db:pg://app@db:5433/pgflight', {'PGPASSWORD': 'secret'})
    """
    params = {k: str(v) for k, v in conninfo_to_dict(dsn).items() if v is not None}
    env = {var: params[key] for key, var in _ENV_OF.items() if key in params}
    host = params.get("host", "")
    if host.startswith("/") or "," in host:  # unix socket dir or multi-host: leave it to libpq
        env["PGHOST"] = host
        host = ""
    user = quote(params.get("user", ""), safe="")
    port = params.get("port", "")
    netloc = (
        (f"{user}@" if user else "") + (f"[{host}]" if ":" in host else host) + (f":{port}" if port else "")
    )
    dbname = quote(params.get("dbname", ""), safe="")
    return f"db:pg://{netloc}/{dbname}", env


def _sqitch(args: list[str], dsn: str, root: Path | None = None) -> str:
    exe = shutil.which("sqitch")
    if exe is None:
        raise MigrationError("sqitch not found; run scripts/setup (apt: sqitch)")
    target, extra = sqitch_target(dsn)
    env = {**os.environ, **extra}
    env.setdefault("SQITCH_FULLNAME", "pgflight")
    env.setdefault("SQITCH_EMAIL", "pgflight@localhost")
    with contextlib.suppress(RuntimeError):  # sqitch runs psql: use the one matching the server
        env["PATH"] = f"{find_bindir()}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(
        [exe, *args, "--target", target],
        cwd=root or project_root(),
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
        errors = [ln for ln in lines if "ERROR" in ln or "FATAL" in ln or "error" in ln.lower()]
        detail = (errors or lines or [f"exit {proc.returncode}"])[0]
        raise MigrationError(f"sqitch {args[0]} failed: {detail}", output)
    return output


def deploy(dsn: str, *, to: str | None = None, verify: bool = True, root: Path | None = None) -> str:
    """
    Deploy every change of sqitch.plan (up to `to`) into the database `dsn` names.

    :param verify: run each change's verify script (`--verify`).
    :param root: the directory holding sqitch.plan and sql/ (default: this checkout).
    :return: sqitch's output.
    :raises MigrationError: a change or its verify script failed (sqitch reverts that change).
    """
    args = ["deploy", "--verify" if verify else "--no-verify"]
    if to:
        args += ["--to", to]
    return _sqitch(args, dsn, root)


def revert(dsn: str, *, to: str | None = None, root: Path | None = None) -> str:
    """Revert every change (or those after `to`) without asking; return sqitch's output."""
    args = ["revert", "-y"]
    if to:
        args += ["--to", to]
    return _sqitch(args, dsn, root)


def verify(dsn: str, *, root: Path | None = None) -> str:
    """Run the verify script of every deployed change; return sqitch's output."""
    return _sqitch(["verify"], dsn, root)


# pg_dump's lines that say nothing about the schema: version banners, session SETs and the
# random \restrict key of newer pg_dump releases.
_DUMP_NOISE = re.compile(
    r"^(-- Dumped (from|by) .*|-- PostgreSQL database dump.*|\\(un)?restrict .*"
    r"|SET \w+ = .*;|SELECT pg_catalog\.set_config\(.*\);)$"
)


_DUMPED_BY = re.compile(r"^-- Dumped by pg_dump version (\d+)", re.MULTILINE)
DUMP_MAJOR_LINE = "-- pg_dump major version: "


def normalise_dump(text: str) -> str:
    """
    pg_dump's output without version lines, SETs, header frames and runs of blank lines, opened
    by one line naming pg_dump's major version (``-- pg_dump major version: 15``): another major
    prints some objects differently, so only dumps of one major compare (:func:`dump_major`).
    """
    major = _DUMPED_BY.search(text)
    lines = [ln.rstrip() for ln in text.splitlines() if not _DUMP_NOISE.match(ln)]
    text = "\n".join(ln for ln in lines if ln != "--")  # the frames around pg_dump's headers
    body = re.sub(r"\n{3,}", "\n\n", text).strip("\n") + "\n"
    return f"{DUMP_MAJOR_LINE}{major.group(1)}\n\n{body}" if major else body


def dump_major(dump: str) -> int | None:
    """The pg_dump major version a normalised dump was made with, or None (an older dump)."""
    first = dump.split("\n", 1)[0]
    return int(first.removeprefix(DUMP_MAJOR_LINE)) if first.startswith(DUMP_MAJOR_LINE) else None


def dump_schema(dsn: str) -> str:
    """
    The normalised `pg_dump --schema-only --schema=pgflight` of the database `dsn` names: what
    sql/schema.dump.sql holds for a database deployed from this checkout. The events log's day
    partitions (``events_YYYYMMDD``, made ahead of today's date by maintain_partitions) are left
    out: they are named by the day of the deploy, not by the schema.

    :raises MigrationError: pg_dump failed.
    """
    exe = find_bindir() / "pg_dump"
    params = {k: str(v) for k, v in conninfo_to_dict(dsn).items() if v is not None}
    env = {**os.environ, **{var: params[key] for key, var in _ENV_OF.items() if key in params}}
    bare = make_conninfo(dsn, **{key: None for key in _ENV_OF})  # secrets travel in env
    proc = subprocess.run(
        [
            str(exe),
            "--schema-only",
            "--schema=pgflight",
            "--exclude-table=pgflight.events_[0-9]*",
            "--no-tablespaces",
            "--dbname",
            bare,
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise MigrationError(f"pg_dump failed: {proc.stderr.strip()}", proc.stderr)
    return normalise_dump(proc.stdout)


#: The release a database may be upgraded from, and the project name its registry rows take
#: once the re-baselined plan is recorded in their place.
UPGRADE_FROM = "0.9"
RETIRED_PROJECT = "pgflight-0.9"


def bridge_root(root: Path | None = None) -> Path:
    """sql/upgrade/from-0.9: the old plan and the scripts of its changes after its last tag."""
    return (root or project_root()) / "sql" / "upgrade" / f"from-{UPGRADE_FROM}"


def registry_release(dsn: str) -> str | None:
    """
    Which plan the database's sqitch registry holds: "0.9" (the plan before the re-baseline: it
    has the tag @v0.9.0), "current" (this plan), or None (nothing deployed).
    """
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        if conn.execute("select to_regclass('sqitch.tags') is not null").fetchone() != (True,):
            return None
        rows = conn.execute(
            "select exists (select from sqitch.tags where project = 'pgflight' and tag = %s),"
            " exists (select from sqitch.changes where project = 'pgflight')",
            [f"@v{UPGRADE_FROM}.0"],
        ).fetchone()
    assert rows is not None
    if rows[0]:
        return UPGRADE_FROM
    return "current" if rows[1] else None


def upgrade(dsn: str, *, root: Path | None = None) -> str:
    """
    Bring a database to this plan, whatever plan deployed it: a database of the plan before the
    re-baseline (at @v0.9.0 or any later change of that plan) is first brought to that plan's
    last change by the bridge (sql/upgrade/from-0.9: only the changes after @v0.9.0), its schema
    checked against that plan's committed dump, the functions and comments whose history
    references the re-baseline put in words replaced by the new plan's (reword.sql), its registry
    rows renamed to project
    pgflight-0.9, and this plan recorded without running it (``sqitch deploy --log-only``); then,
    as for any database, ``sqitch deploy --verify`` runs what this plan has beyond that.

    :return: sqitch's output.
    :raises MigrationError: a bridge change failed, or the schema after the bridge is not the
        committed one (nothing recorded: the database stays on the old plan).
    """
    import psycopg

    root = root or project_root()
    out = ""
    if registry_release(dsn) == UPGRADE_FROM:
        bridge = bridge_root(root)
        out += _sqitch(["deploy", "--verify", "--mode", "change"], dsn, bridge)
        expected = (bridge / "schema.dump.sql").read_text()
        actual = dump_schema(dsn)
        if dump_major(actual) == dump_major(expected) and actual != expected:
            import difflib

            diff = "\n".join(
                list(
                    difflib.unified_diff(
                        expected.splitlines(), actual.splitlines(), "0.9", "database", lineterm=""
                    )
                )[:60]
            )
            raise MigrationError(
                "the schema of this database is not the one the 0.9 plan deploys: not upgraded", diff
            )
        first = next(
            ln.split()[0]
            for ln in (root / "sqitch.plan").read_text().splitlines()
            if ln.strip() and not ln.startswith(("%", "#"))
        )
        reword = bridge / "reword.sql"
        with psycopg.connect(dsn) as conn:  # one transaction: the words and the old rows renamed, or nothing
            if reword.exists():
                conn.execute(reword.read_text().encode())
            conn.execute(
                "update sqitch.projects set project = %s, uri = uri || '#' || %s where project = 'pgflight'",
                [RETIRED_PROJECT, UPGRADE_FROM],
            )
        out += _sqitch(["deploy", "--log-only", "--to", _last_tag(root) or first], dsn, root)
    return out + deploy(dsn, root=root)


def _last_tag(root: Path) -> str | None:
    tags = [ln.split()[0] for ln in (root / "sqitch.plan").read_text().splitlines() if ln.startswith("@")]
    return tags[0] if tags else None


def status(dsn: str) -> str:
    """sqitch's status report for the database."""
    return _sqitch(["status"], dsn)


def install_schedules(dsn: str) -> str | None:
    """
    Install pgflight's pg_cron jobs (``pgflight.install_schedules()``; idempotent).

    :return: None when pg_cron now runs the sweeps; otherwise why not (pg_cron missing in this
        database, ZF011, or no privilege to schedule): the caller must run the sweeps itself.
    """
    from pgflight import db, errors  # the client, only when scheduling is asked for
    from pgflight.db.connection import connect

    with connect(dsn) as conn:
        try:
            db.install_schedules(conn)
        except errors.PgflightError as e:
            return e.message
    return None


def confirm_sweep(
    dsn: str, *, timeout_s: float = 75.0, poll_s: float = 1.0, since: datetime | None = None
) -> tuple[bool, str]:
    """
    Wait until pg_cron has actually run the sweep job of this database once: installed is not
    running (with scram authentication and no way for pg_cron to log in, every run fails
    while the schedule looks fine). On pg_cron 1.4 the job starts at the next minute boundary.

    :param timeout_s: how long to wait for a run.
    :param since: count runs that started at or after this instant (default: now).
    :return: (True, how it ran) when a run is running or succeeded; (False, why not) when a run
        failed (pg_cron's own message, e.g. "connection failed") or none started in time.
    """
    import time

    import psycopg

    deadline = time.monotonic() + timeout_s
    with psycopg.connect(dsn, autocommit=True) as conn:
        if since is None:
            now = conn.execute("select now()").fetchone()
            assert now is not None
            since = now[0]
        while True:
            row = conn.execute(
                "select d.status, coalesce(d.return_message, ''), d.username"
                "  from cron.job_run_details d join cron.job j using (jobid)"
                " where j.jobname = 'pgflight-sweeps' and j.database = current_database()"
                "   and d.start_time >= %s order by d.runid desc limit 1",
                [since],
            ).fetchone()
            if row is not None and row[0] in ("running", "succeeded"):
                return True, f"the sweep job ran as {row[2]} ({row[0]})"
            if row is not None and row[0] == "failed":
                return False, f"the sweep job failed as {row[2]}: {row[1].strip() or 'no message'}"
            if time.monotonic() > deadline:
                return False, f"the sweep job did not start within {timeout_s:.0f} s"
            time.sleep(poll_s)
