"""Migrations deploy, verify, revert and redeploy; the embedded cluster CLI starts, reuses, stops."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from conftest import Server
from pgflight import migrate
from pgflight.embedded import Cluster

# each test deploys or reverts the whole plan through sqitch (a psql call per change): 1-2 min
# on an idle 2-core machine, past the suite's 300 s timeout under a load of 12 (seen here)
pytestmark = pytest.mark.timeout(900)

ROLES = ("pgflight_owner", "pgflight_worker", "pgflight_operator", "pgflight_reader", "pgflight_privileged")


def _has_schema(dsn: str) -> bool:
    with psycopg.connect(dsn, autocommit=True) as c:
        return c.execute("select to_regnamespace('pgflight') is not null").fetchone() == (True,)


def _roles(server: Server) -> set[str]:
    with psycopg.connect(server.dsn, autocommit=True) as c:
        rows = c.execute("select rolname from pg_roles where rolname = any(%s)", [list(ROLES)]).fetchall()
    return {r[0] for r in rows}


def test_deploy_revert_redeploy_on_an_empty_database_leaves_another_database_alone(server: Server) -> None:
    """
    An empty database is deployed, reverted and deployed again beside a deployed one (a clone of the
    template, which sqitch deployed as any database): neither touches the other, and the cluster's
    roles stay while a database uses them. Three whole-plan passes of sqitch for `a` and one revert
    for `b`, where deploying `b` too (four more) would prove nothing the template's deploy did not.
    """
    a = server.create_database(prefix="m")
    b = server.create_database(prefix="m", template=server.template)
    try:
        assert not _has_schema(a)
        # --verify: each change's verify script right after it; the roles exist already (the
        # template's deploy made them): created idempotently
        migrate.deploy(a)
        assert _has_schema(a) and _has_schema(b)

        migrate.revert(a)  # roles are still used by b (and by the template): they stay
        assert not _has_schema(a)
        assert _has_schema(b)
        assert _roles(server) == set(ROLES)
        # and so does pgflight_privileged's cluster-wide SET on session_replication_role (b's bulk
        # writes), which the owner (and so the deploy login) never gets back while b uses it, nor
        # pg_read_all_stats (pgflight_privileged's alone)
        with psycopg.connect(b, autocommit=True) as c:
            row = c.execute(
                "select has_parameter_privilege('pgflight_privileged', 'session_replication_role', 'SET'),"
                " has_parameter_privilege('pgflight_owner', 'session_replication_role', 'SET'),"
                " pg_has_role('pgflight_owner', 'pg_read_all_stats', 'usage')"
            ).fetchone()
        assert row == (True, False, False)

        migrate.deploy(a)  # a reverted database deploys again
        assert _has_schema(a)
        migrate.verify(a)

        migrate.revert(b)
        assert not _has_schema(b)
        assert _has_schema(a)
    finally:
        server.drop_database(a)
        server.drop_database(b)


def test_a_failed_deploy_is_reported_as_one_line(empty_dsn: str) -> None:
    with pytest.raises(migrate.MigrationError) as info:
        migrate.deploy(empty_dsn, to="no_such_change")
    assert "\n" not in str(info.value)
    assert info.value.output


def test_sqitch_target_keeps_secrets_out_of_the_uri() -> None:
    target, env = migrate.sqitch_target(
        "host=db.example port=6543 user=app password=s3cret dbname=pf sslmode=require"
    )
    assert target == "db:pg://app@db.example:6543/pf"
    assert env == {"PGPASSWORD": "s3cret", "PGSSLMODE": "require"}

    target, env = migrate.sqitch_target("postgresql://u@/pf?host=/var/run/postgresql")
    assert target == "db:pg://u@/pf"
    assert env == {"PGHOST": "/var/run/postgresql"}


# --- the embedded cluster through the CLI ---------------------------------------------------


@pytest.fixture
def home() -> Iterator[Path]:
    """A PGFLIGHT_HOME the server's OS user can reach (pytest's tmp_path is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="pgflight-cli-"))
    os.chmod(folder, 0o755)
    yield folder
    Cluster(folder / ".pgflight").destroy()
    shutil.rmtree(folder, ignore_errors=True)


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PGFLIGHT_DSN",)}
    env["PGFLIGHT_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "pgflight.cli", *args],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_db_up_status_down(home: Path) -> None:
    r = _cli(home, "db", "status")
    assert r.returncode == 3 and "no cluster" in r.stdout, r

    r = _cli(home, "db", "up")
    assert r.returncode == 0 and r.stdout.startswith("started: postgresql://postgres@127.0.0.1:"), r
    url = r.stdout.split(": ", 1)[1].strip()

    r = _cli(home, "db", "up")
    assert r.returncode == 0 and r.stdout.strip() == f"already running: {url}", r

    r = _cli(home, "db", "url")
    assert r.stdout.strip() == url
    with psycopg.connect(url, autocommit=True) as c:
        assert c.execute("select current_database()").fetchone() == ("pgflight",)

    r = _cli(home, "db", "status")
    assert r.returncode == 0 and "running" in r.stdout and "not deployed" in r.stdout, r

    r = _cli(home, "db", "down")
    assert r.returncode == 0 and r.stdout.strip() == "stopped", r
    r = _cli(home, "db", "status")
    assert r.returncode == 3 and "\nstopped" in r.stdout, r
    r = _cli(home, "db", "down")
    assert r.stdout.strip() == "not running", r


def test_db_up_survives_a_stale_pid_file_and_a_taken_port(home: Path) -> None:
    assert _cli(home, "db", "up").returncode == 0
    cluster = Cluster(home / ".pgflight")
    cluster.stop("immediate")
    old_port = cluster.port
    assert old_port is not None

    # A postmaster.pid naming a live process that is not postgres (a recycled pid) ...
    sleeper = subprocess.Popen(["sleep", "60"])
    # ... and someone else listening on the saved port.
    import socket

    squatter = socket.socket()
    # the stopped server's side of its last connections may still be in TIME_WAIT on that port;
    # SO_REUSEADDR binds past them (Linux still allows only one listener on the port)
    squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    squatter.bind(("127.0.0.1", old_port))
    squatter.listen()
    try:
        pidfile = cluster.datadir / "postmaster.pid"
        pidfile.write_text(f"{sleeper.pid}\n{cluster.datadir}\n")
        r = _cli(home, "db", "up")
        assert r.returncode == 0, r
        assert cluster.port != old_port
        assert cluster.running() and cluster.pid() != sleeper.pid
    finally:
        squatter.close()
        sleeper.kill()
        sleeper.wait()


def test_errors_are_one_line_without_traceback(home: Path) -> None:
    r = _cli(home, "migrate")
    assert r.returncode == 3  # the documented code for "no database"
    assert r.stderr.strip().startswith("error: the database is not running"), r
    _, hint = r.stderr.strip().splitlines()
    assert "Traceback" not in r.stderr and hint.startswith("hint:") and "pgflight db up" in hint, r


def test_pgflight_dsn_points_at_an_existing_server(home: Path, dsn: str) -> None:
    env_run = lambda *a: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "pgflight.cli", *a],
        env={**os.environ, "PGFLIGHT_HOME": str(home), "PGFLIGHT_DSN": dsn},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    r = env_run("db", "up")
    assert r.returncode == 0 and "PGFLIGHT_DSN is set" in r.stdout, r
    assert not (home / ".pgflight").exists()
    r = env_run("db", "status")
    assert r.returncode == 0 and "changes deployed" in r.stdout, r
    r = env_run("db", "url")
    assert r.stdout.strip() == dsn


@pytest.mark.skipif(os.geteuid() != 0, reason="only root's server runs as another OS user")
def test_a_clone_the_postgres_user_cannot_enter_gets_its_data_where_it_can() -> None:
    # a clone in root's home directory: mode 700, so the postgres OS user cannot walk into it
    private = Path(tempfile.mkdtemp(prefix="pgflight-roothome-"))
    assert private.stat().st_mode & 0o777 == 0o700
    home = private / "clone"
    home.mkdir()
    cluster = Cluster(home / ".pgflight")
    try:
        r = _cli(home, "db", "up")
        assert r.returncode == 0 and r.stdout.startswith("started: postgresql://"), r
        assert cluster.server_folder != cluster.folder
        assert cluster.server_folder.is_relative_to(Path("/var/lib/pgflight/clusters"))
        assert f"data: {cluster.server_folder}" in r.stdout, r
        with psycopg.connect(cluster.dsn(), autocommit=True) as c:
            assert c.execute("select current_setting('data_directory')").fetchone() == (str(cluster.datadir),)

        # later commands find it with nothing set but the folder they run in
        r = _cli(home, "db", "status")
        assert "running" in r.stdout and f"data: {cluster.server_folder}" in r.stdout, r
        assert _cli(home, "db", "down").stdout.strip() == "stopped"
        r = _cli(home, "db", "up")
        assert r.returncode == 0 and r.stdout.startswith("started: "), r
    finally:
        relocated = cluster.server_folder
        cluster.destroy()
        shutil.rmtree(private, ignore_errors=True)
    assert not relocated.exists()


def test_hints_name_the_command_as_it_is_run_from_a_checkout(home: Path) -> None:
    checkout = Path(__file__).resolve().parent.parent
    run = lambda cwd: subprocess.run(  # noqa: E731
        [str(checkout / "scripts" / "pgflight"), "db", "status"],
        env={k: v for k, v in os.environ.items() if k not in ("PGFLIGHT_DSN",)}
        | {"PGFLIGHT_HOME": str(home)},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    r = run(checkout)
    assert r.returncode == 3 and "create it with `scripts/pgflight db up`" in r.stdout, r
    r = run(home)
    assert f"create it with `{checkout}/scripts/pgflight db up`" in r.stdout, r
    # an installed package (no scripts/pgflight in between) still says pgflight
    r = _cli(home, "db", "status")
    assert "create it with `pgflight db up`" in r.stdout, r
