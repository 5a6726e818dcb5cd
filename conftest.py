"""
Real PostgreSQL for every test.

Once per session: a throwaway cluster in a temporary folder (the same `Cluster` class as
`pgflight db up`, with fsync off), or the server `PGFLIGHT_TEST_DSN` names (a superuser DSN).
The schema is deployed with sqitch into database `pgflight_template` (plus pgTAP in `public` and
`allow_fake_clock = true`); each test that asks for `dsn` or `conn` gets a fresh clone of it.

Fixtures:
    server         Server: superuser `dsn`, `host`, `port`, `cluster` (None with PGFLIGHT_TEST_DSN),
                   `bindir`, `dsn_for(db)`, `template`, `deployed(to, root=)`.
    dsn            str: DSN of a fresh database cloned from the template; dropped afterwards.
    deployed       factory: deployed(to=None, root=None) -> DSN of a fresh database holding what
                   `migrate.deploy(dsn, to=to, root=root)` leaves in an empty one (the plan up to
                   a tag, or another project's plan such as a release's from git): deployed once
                   per session into a database of its own, then cloned; dropped afterwards.
    conn           psycopg autocommit connection to `dsn`.
    connect        factory: connect(timeout_s=5, autocommit=True, dsn=None) -> Connection with
                   statement_timeout and lock_timeout set; closed after the test (races).
    empty_dsn      str: DSN of a fresh empty database (no schema); dropped afterwards.
    logins         Logins: login roles with scram passwords in every lane (pgf_worker_a/_b,
                   pgf_operator_a/_b, pgf_reader_a/_b); on the test cluster, these logins' host connections
                   must authenticate with scram-sha-256.
                   `logins.dsn(login, dsn)` is the DSN of database `dsn` as that login.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pgflight import migrate
from pgflight.embedded import Cluster, find_bindir

ROOT = Path(__file__).resolve().parent
TEMPLATE = "pgflight_template"
TEST_SETTINGS = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "log_min_messages": "warning",
}


@dataclass
class Server:
    """The PostgreSQL server of this test session."""

    dsn: str  # superuser, database `postgres`
    host: str
    port: int
    bindir: Path
    cluster: Cluster | None  # None when PGFLIGHT_TEST_DSN points at an existing server
    template: str = TEMPLATE
    _created: list[str] = field(default_factory=list)
    # (to, digest of the plan) -> the database deployed so, which clones are made from
    _deployed_at: dict[tuple[str | None, str], str] = field(default_factory=dict)

    def dsn_for(self, database: str) -> str:
        """Superuser DSN of another database on this server."""
        return make_conninfo(self.dsn, dbname=database)

    def create_database(self, *, template: str | None = None, prefix: str = "t") -> str:
        """Create a uniquely named database (optionally cloned); return its superuser DSN."""
        name = f"{prefix}_{uuid.uuid4().hex[:16]}"
        stmt = sql.SQL("create database {}").format(sql.Identifier(name))
        if template:
            stmt += sql.SQL(" template {}").format(sql.Identifier(template))
        with psycopg.connect(self.dsn, autocommit=True) as c:
            c.execute(stmt)
        return self.dsn_for(name)

    def deployed(self, to: str | None = None, *, root: Path | None = None) -> str:
        """
        Superuser DSN of a new database holding exactly what `migrate.deploy(dsn, to=to, root=root)`
        leaves in an empty one. The first call for a plan and `to` runs that deploy (sqitch, a psql
        call per change) into a database of its own; every call clones it (CREATE DATABASE ...
        TEMPLATE copies the files, the sqitch registry with them), so tests that start from the
        same release do not each deploy the whole plan again.
        """
        plan = ((root or ROOT) / "sqitch.plan").read_bytes()
        key = (to, hashlib.sha256(plan).hexdigest())
        source = self._deployed_at.get(key)
        if source is None:
            worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # one server may serve every process
            source = "at_" + hashlib.sha256(repr((key, worker)).encode()).hexdigest()[:16]
            with psycopg.connect(self.dsn, autocommit=True) as c:
                c.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(source)))
                c.execute(sql.SQL("create database {}").format(sql.Identifier(source)))
            try:
                migrate.deploy(self.dsn_for(source), to=to, root=root)
            except BaseException:
                self.drop_database(self.dsn_for(source))
                raise
            self._deployed_at[key] = source
        return self.create_database(template=source, prefix="d")

    def drop_database(self, dsn: str) -> None:
        """Drop the database `dsn` names, terminating its connections first."""
        name = conninfo_to_dict(dsn)["dbname"]
        with psycopg.connect(self.dsn, autocommit=True) as c:
            c.execute(
                "select pg_terminate_backend(pid) from pg_stat_activity"
                " where datname = %s and pid <> pg_backend_pid()",
                [name],
            )
            c.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))


def _build_template(server: Server) -> None:
    with psycopg.connect(server.dsn, autocommit=True) as c:
        c.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(TEMPLATE)))
        c.execute(sql.SQL("create database {}").format(sql.Identifier(TEMPLATE)))
    dsn = server.dsn_for(TEMPLATE)
    migrate.deploy(dsn)
    with psycopg.connect(dsn, autocommit=True) as c:
        # pg_prove needs pgTAP in every clone; test_pgtap says so if the server lacks it.
        if c.execute("select 1 from pg_available_extensions where name = 'pgtap'").fetchone():
            c.execute("create extension if not exists pgtap schema public")
        c.execute("update pgflight.settings set allow_fake_clock = true")


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    external = os.environ.get("PGFLIGHT_TEST_DSN")
    if external:
        params = conninfo_to_dict(external)
        srv = Server(
            dsn=make_conninfo(external, dbname="postgres"),
            host=str(params.get("host") or "localhost"),
            port=int(params.get("port") or 5432),
            bindir=find_bindir(),
            cluster=None,
        )
        _build_template(srv)
        yield srv
        return

    # Not pytest's tmp_path: as root the server runs as `postgres`, which must reach the folder,
    # and the unix socket path must stay short.
    folder = Path(tempfile.mkdtemp(prefix="pgflight-test-"))
    os.chmod(folder, 0o755)
    cluster = Cluster(folder, settings=TEST_SETTINGS)
    try:
        cluster.up()
        port = cluster.port
        assert port is not None
        srv = Server(
            dsn=cluster.dsn("postgres"), host="127.0.0.1", port=port, bindir=cluster.bindir, cluster=cluster
        )
        _build_template(srv)
        yield srv
    finally:
        cluster.destroy()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def dsn(server: Server) -> Iterator[str]:
    """A fresh database cloned from the deployed template."""
    d = server.create_database(template=TEMPLATE)
    yield d
    server.drop_database(d)


@pytest.fixture
def deployed(server: Server) -> Iterator[Callable[..., str]]:
    """Fresh databases deployed to a point of a plan (`Server.deployed`); dropped afterwards."""
    made: list[str] = []

    def _deployed(to: str | None = None, *, root: Path | None = None) -> str:
        made.append(server.deployed(to, root=root))
        return made[-1]

    yield _deployed
    for d in made:
        server.drop_database(d)


@pytest.fixture
def empty_dsn(server: Server) -> Iterator[str]:
    """A fresh database with nothing deployed."""
    d = server.create_database(prefix="e")
    yield d
    server.drop_database(d)


@pytest.fixture
def conn(dsn: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    with psycopg.connect(dsn, autocommit=True) as c:
        yield c


ConnectFactory = Callable[..., psycopg.Connection[tuple[object, ...]]]


@pytest.fixture
def eng(conn: psycopg.Connection[tuple[object, ...]]) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """The test database on the fake clock at T0 with a workspace; invariants checked afterwards."""
    from core_helpers import invariant_violations, set_clock, setup_engine  # tests_py/, on pythonpath

    setup_engine(conn)
    set_clock(conn, 0)
    yield conn
    assert invariant_violations(conn) == {}


@pytest.fixture
def connect(dsn: str) -> Iterator[ConnectFactory]:
    """
    Open extra connections to the test database, each with statement_timeout and lock_timeout, so
    a race that regresses into a deadlock or a hang fails instead of blocking the suite.
    """
    opened: list[psycopg.Connection[tuple[object, ...]]] = []

    def _connect(
        timeout_s: float = 5, *, autocommit: bool = True, dsn_: str | None = None, **kwargs: object
    ) -> psycopg.Connection[tuple[object, ...]]:
        ms = int(timeout_s * 1000)
        c = psycopg.connect(
            dsn_ or dsn,
            autocommit=autocommit,
            options=f"-c statement_timeout={ms} -c lock_timeout={ms}",
            **kwargs,  # type: ignore[arg-type]
        )
        opened.append(c)
        return c

    yield _connect
    for c in opened:
        c.close()


# --- logins: real roles with passwords over TCP (the attack suite) -------------------

LOGIN_PASSWORD = "pgflight-test-password"
# login name -> the pgflight role it is a member of. Roles are cluster-wide, so they are created
# once per session; what each may do in a database (its workspaces) is granted per test.
LOGINS = {
    "pgf_worker_a": "pgflight_worker",
    "pgf_worker_b": "pgflight_worker",
    "pgf_operator_a": "pgflight_operator",
    "pgf_operator_b": "pgflight_operator",
    "pgf_reader_a": "pgflight_reader",
    "pgf_reader_b": "pgflight_reader",
    # a deploy login: a member of pgflight_owner, as docs/security.md deploys
    "pgf_deploy": "pgflight_owner",
}


@dataclass
class Logins:
    """Login roles with scram passwords; `dsn(login, database_dsn)` reaches a database as one of them."""

    names: dict[str, str]
    password: str
    scram: bool  # False with PGFLIGHT_TEST_DSN: the server's own pg_hba decides

    def dsn(self, login: str, database_dsn: str) -> str:
        assert login in self.names, login
        return make_conninfo(database_dsn, user=login, password=self.password)


def _require_scram_for_host_logins(cluster: Cluster) -> None:
    """
    Put two lines first in pg_hba.conf: the `postgres` superuser keeps trust over TCP (the rest of
    the suite and sqitch use it), and the attack suite's logins (`LOGINS`) must authenticate with
    scram-sha-256. Other roles keep the cluster's own lines, so a test that makes a login of its
    own (C37's worker) is not refused by whichever test process first asked for `logins`.
    Unix-socket lines stay as initdb wrote them (pg_cron's libpq connections use the socket).
    """
    hba = cluster.datadir / "pg_hba.conf"
    marker = "# pgflight tests: scram for the attack suite's logins\n"
    text = hba.read_text()
    if marker not in text:
        hba.write_text(
            marker
            + "host all postgres 127.0.0.1/32 trust\n"
            + f"host all {','.join(LOGINS)} 127.0.0.1/32 scram-sha-256\n"
            + text
        )


@pytest.fixture(scope="session")
def logins(server: Server) -> Logins:
    """
    Password-protected login roles in every lane (two of each, for tenants A and B), with the
    cluster's host connections requiring scram-sha-256 for them.
    """
    with psycopg.connect(server.dsn, autocommit=True) as c:
        c.execute("alter system set password_encryption = 'scram-sha-256'")
        c.execute("select pg_reload_conf()")
        c.execute("set password_encryption = 'scram-sha-256'")
        for login, role in LOGINS.items():
            exists = c.execute("select 1 from pg_roles where rolname = %s", [login]).fetchone()
            verb = "alter" if exists else "create"
            c.execute(
                sql.SQL("{} role {} login password {}").format(
                    sql.SQL(verb), sql.Identifier(login), sql.Literal(LOGIN_PASSWORD)
                )
            )
            c.execute(sql.SQL("grant {} to {}").format(sql.Identifier(role), sql.Identifier(login)))
        if server.cluster is not None:
            _require_scram_for_host_logins(server.cluster)
            c.execute("select pg_reload_conf()")
    return Logins(names=dict(LOGINS), password=LOGIN_PASSWORD, scram=server.cluster is not None)


# --- a real browser ---------------------------------------------------------------------------
#: The distribution's Chromium (apt package chromium), driven by Playwright; never a download.
CHROMIUM = os.environ.get("PGFLIGHT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """
    One headless Chromium for the whole test process: Playwright's sync API runs one instance per
    thread, so the inspector's and the report's browser tests share this one.
    """
    if not shutil.which(CHROMIUM):
        pytest.fail(f"{CHROMIUM} not found: scripts/setup installs the chromium package")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


_SESSION_STARTED = __import__("time").time()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """After a run of the conformance suite: each library's burn-down and wake latency side by side."""
    import json

    figures = Path(__file__).resolve().parent / ".pgflight" / "conformance-figures.json"
    try:
        data = json.loads(figures.read_text())
    except (OSError, ValueError):
        return
    fresh = {c: f for c, f in data.items() if f.get("recorded_at", 0) >= _SESSION_STARTED}
    if not fresh:
        return
    cols = ("burn_down_steps_per_s", "wake_latency_p50_ms", "wake_latency_max_ms")
    terminalreporter.section("worker-library conformance figures (this run)")
    terminalreporter.write_line(f"{'client':<12}" + "".join(f"{c:>24}" for c in cols))
    for client, f in sorted(fresh.items()):
        cells = "".join(f"{f[c]:>24.4g}" if c in f else f"{'-':>24}" for c in cols)
        terminalreporter.write_line(f"{client:<12}{cells}")


# --- order: the longest tests first --------------------------------------------------------------
#: Modules whose tests each take a minute or more on the 2-core machine (a single process's
#: --durations, longest first): run first, so that under xdist no such test starts last and runs
#: alone at the tail while the other process idles. Within each, pytest-randomly's order stays.
LONG_FIRST = (
    "test_fence_matrix.py",
    "test_upgrade.py",
    "test_migrations.py",
    "test_fan_in.py",
    "test_rebaseline.py",
    "test_bench_peers.py",
    "test_agent_kills.py",
    "test_schema_dump.py",
    "test_reclaim_events.py",
    "test_reclaim_row_triggers.py",
)


@pytest.hookimpl(trylast=True)  # after pytest-randomly's shuffle, which this sort keeps within a module
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONG_FIRST)))
