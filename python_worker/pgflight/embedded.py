"""
The embedded default: a local PostgreSQL cluster in a folder (by default `<project>/.pgflight/`).

One class, `Cluster`, used by `pgflight db up|down|status` and by the test harness. Layout::

    <folder>/data/           the cluster (PGDATA); our settings live in data/pgflight.conf
    <folder>/run/            unix socket and postgres.log
    <folder>/port            the TCP port, readable without access to data/
    <folder>/server_dir      present only when data/ and run/ live elsewhere (see below)

As root, every server program runs as the `postgres` OS user, which must be able to enter the
folder. A clone under a home directory it cannot enter (root's own, mode 700) keeps `port` and
`server_dir` in the folder and puts data/ and run/ under :data:`RELOCATED_ROOT`, in a folder named
after the project folder and a hash of its path; `pgflight db status` says where.

The server listens on 127.0.0.1 only, with trust authentication for the `postgres` superuser: it
is a development database for the user of this machine, not a shared server. As root, every server
program runs as the `postgres` user (initdb and postgres refuse root).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pwd
import shutil
import socket
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

DATABASE = "pgflight"
SUPERUSER = "postgres"
RUN_AS = "postgres"  # the OS user that runs the server when we are root
RELOCATED_ROOT = Path("/var/lib/pgflight/clusters")  # as root, for folders RUN_AS cannot enter


class EmbeddedError(RuntimeError):
    """The embedded cluster cannot be created, started or reached; the message says what to do."""


def command_name() -> str:
    """
    The CLI as the user runs it, for hints: `PGFLIGHT_COMMAND` (``scripts/pgflight`` sets it to
    itself, so a checkout's hints name ``scripts/pgflight``), else ``pgflight`` (an installed package).
    """
    return os.environ.get("PGFLIGHT_COMMAND") or "pgflight"


def project_home() -> Path:
    """The folder the CLI works in: `PGFLIGHT_HOME`, else the current directory."""
    return Path(os.environ.get("PGFLIGHT_HOME") or os.getcwd()).resolve()


def source_root() -> Path:
    """The checkout this package runs from (holds sqitch.plan, scripts/, .pgflight/pg_bindir)."""
    return Path(__file__).resolve().parent.parent.parent


def find_bindir() -> Path:
    """
    Locate the PostgreSQL server programs (initdb, pg_ctl, postgres, psql).

    Order: `PGFLIGHT_PG_BINDIR`; the directory `scripts/setup` recorded in `.pgflight/pg_bindir`;
    the highest `/usr/lib/postgresql/*/bin` holding initdb; the directory of `pg_ctl` on PATH.
    """
    env = os.environ.get("PGFLIGHT_PG_BINDIR")
    if env:
        if not (Path(env) / "initdb").exists():
            raise EmbeddedError(f"PGFLIGHT_PG_BINDIR={env} has no initdb")
        return Path(env)
    for recorded in (source_root() / ".pgflight" / "pg_bindir", project_home() / ".pgflight" / "pg_bindir"):
        with contextlib.suppress(OSError):
            candidate = Path(recorded.read_text().strip())
            if (candidate / "initdb").exists():
                return candidate
    debian = sorted(
        (p for p in Path("/usr/lib/postgresql").glob("*/bin") if (p / "initdb").exists()),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
        reverse=True,
    )
    if debian:
        return debian[0]
    on_path = shutil.which("pg_ctl")
    if on_path and (Path(on_path).parent / "initdb").exists():
        return Path(on_path).parent
    raise EmbeddedError("PostgreSQL server programs not found; run scripts/setup or set PGFLIGHT_PG_BINDIR")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def port_is_free(port: int) -> bool:
    """True when nothing listens on 127.0.0.1:`port` (bound with SO_REUSEADDR, as PostgreSQL binds)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as postgres does
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@dataclass(frozen=True)
class ClusterStatus:
    """What `pgflight db status` reports about the embedded cluster."""

    folder: Path
    initialized: bool
    running: bool
    pid: int | None
    port: int | None
    dsn: str | None


class Cluster:
    """
    A PostgreSQL cluster living in `folder`, started and stopped with pg_ctl.

    :param folder: where the cluster lives; default `<project_home()>/.pgflight`.
    :param bindir: PostgreSQL programs; default `find_bindir()`.
    :param settings: extra postgresql.conf settings (the tests pass fsync=off); they are written at
        every start, so they can change between runs.
    :param database: the database `up()` creates and `dsn()` names by default.
    """

    def __init__(
        self,
        folder: Path | str | None = None,
        *,
        bindir: Path | str | None = None,
        settings: Mapping[str, str] | None = None,
        database: str = DATABASE,
    ) -> None:
        self.folder = Path(folder).resolve() if folder else project_home() / ".pgflight"
        self._bindir = Path(bindir) if bindir else None
        self.settings = dict(settings or {})
        self.database = database
        self._portfile = self.folder / "port"
        self._serverfile = self.folder / "server_dir"

    # --- paths and identity ----------------------------------------------------------------

    @property
    def server_folder(self) -> Path:
        """Where data/ and run/ live: the folder itself, or the place `server_dir` names."""
        try:
            recorded = self._serverfile.read_text().strip()
        except OSError:
            return self.folder
        return Path(recorded) if recorded else self.folder

    @property
    def datadir(self) -> Path:
        return self.server_folder / "data"

    @property
    def rundir(self) -> Path:
        return self.server_folder / "run"

    @property
    def logfile(self) -> Path:
        return self.rundir / "postgres.log"

    @property
    def bindir(self) -> Path:
        if self._bindir is None:
            self._bindir = find_bindir()
        return self._bindir

    def program(self, name: str) -> str:
        return str(self.bindir / name)

    @property
    def port(self) -> int | None:
        try:
            return int(self._portfile.read_text().strip())
        except (OSError, ValueError):
            return None

    def dsn(self, database: str | None = None) -> str:
        """`postgresql://postgres@127.0.0.1:PORT/DATABASE` (superuser, trust authentication)."""
        port = self.port
        if port is None:
            raise EmbeddedError(f"no cluster in {self.folder}; run `{command_name()} db up`")
        return f"postgresql://{SUPERUSER}@127.0.0.1:{port}/{database or self.database}"

    url = dsn

    # --- lifecycle -------------------------------------------------------------------------

    def up(self) -> str:
        """Create the cluster if needed, start it if stopped, create the database; return its DSN."""
        self.init()
        self.start()
        self.create_database(self.database)
        return self.dsn()

    def init(self) -> None:
        """Run initdb once; a second call does nothing."""
        if (self.datadir / "PG_VERSION").exists():
            return
        if os.geteuid() == 0:
            try:
                pwd.getpwnam(RUN_AS)
            except KeyError:
                raise EmbeddedError(
                    f"running as root needs the OS user {RUN_AS!r} to run the server; install postgresql"
                ) from None
        if not (self.bindir / "initdb").exists():
            raise EmbeddedError(f"{self.bindir} has no initdb; run scripts/setup")
        self._make_folders()
        self._run(
            [
                self.program("initdb"),
                "-D",
                str(self.datadir),
                "-U",
                SUPERUSER,
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-instructions",
            ],
            what="initdb",
        )
        with (self.datadir / "postgresql.conf").open("a") as f:
            f.write("\n# pgflight: generated settings, rewritten at every start\n")
            f.write("include_if_exists = 'pgflight.conf'\n")
        self._write_port(free_port())

    def copy_of(self, source: Cluster) -> None:
        """
        Make this new cluster a copy of the stopped cluster `source`: its data directory as `cp -a`
        copies it (databases, roles, extensions, pg_hba.conf), on a port of its own. Several servers
        that must start alike (`cells.local_cells`) are deployed once this way, not once each.
        """
        if (self.datadir / "PG_VERSION").exists():
            raise EmbeddedError(f"{self.folder} already holds a cluster")
        if source.running():
            raise EmbeddedError(f"copy of {source.folder}: stop it first (a running server is no copy)")
        self._make_folders()
        self._run(["cp", "-a", f"{source.datadir}/.", str(self.datadir)], what="copy the data directory")
        self._write_port(free_port())

    def start(self) -> None:
        """Start the server unless it is running; move to a free port if the saved one is taken."""
        if not (self.datadir / "PG_VERSION").exists():
            raise EmbeddedError(f"no cluster in {self.folder}; run `{command_name()} db up`")
        if self.running():
            return
        self._clear_stale_pid()
        port = self.port
        if port is None or not port_is_free(port):
            port = free_port()
            self._write_port(port)
        self._write_conf(port)
        self.rundir.mkdir(mode=0o700, exist_ok=True)
        self._give(self.rundir)
        self._run(
            [
                self.program("pg_ctl"),
                "-D",
                str(self.datadir),
                "-l",
                str(self.logfile),
                "-w",
                "-t",
                "120",
                "start",
            ],
            what="start PostgreSQL",
        )

    def stop(self, mode: str = "fast") -> bool:
        """Stop the server; return False if it was not running."""
        if not self.running():
            self._clear_stale_pid()
            return False
        self._run(
            [self.program("pg_ctl"), "-D", str(self.datadir), "-m", mode, "-w", "-t", "120", "stop"],
            what="stop PostgreSQL",
        )
        return True

    def restart(self, mode: str = "fast") -> None:
        """Restart; `mode="immediate"` is a crash (no checkpoint, recovery at start)."""
        self._run(
            [
                self.program("pg_ctl"),
                "-D",
                str(self.datadir),
                "-l",
                str(self.logfile),
                "-m",
                mode,
                "-w",
                "-t",
                "120",
                "restart",
            ],
            what="restart PostgreSQL",
        )

    def destroy(self) -> None:
        """Stop the server (immediately) and delete the folder (and the relocated data/ and run/)."""
        with contextlib.suppress(EmbeddedError):
            self.stop("immediate")
        if self.server_folder != self.folder:
            shutil.rmtree(self.server_folder, ignore_errors=True)
        shutil.rmtree(self.folder, ignore_errors=True)

    def status(self) -> ClusterStatus:
        initialized = (self.datadir / "PG_VERSION").exists() or self._portfile.exists()
        running = self.running()
        return ClusterStatus(
            folder=self.folder,
            initialized=initialized,
            running=running,
            pid=self.pid() if running else None,
            port=self.port,
            dsn=self.dsn() if self.port is not None else None,
        )

    def pid(self) -> int | None:
        """The postmaster's pid from postmaster.pid, or None (no file, unreadable, garbage)."""
        try:
            first = (self.datadir / "postmaster.pid").read_text().split("\n", 1)[0]
            return int(first)
        except (OSError, ValueError):
            return None

    def running(self) -> bool:
        pid = self.pid()
        if pid is not None:
            return _is_postgres(pid)
        if not os.access(self.datadir, os.R_OK | os.X_OK) and self.port is not None:
            # Somebody else's cluster (made by root): ask the port instead.
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        return False

    def create_database(self, name: str, *, template: str | None = None) -> None:
        """Create database `name` unless it exists."""
        with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
            if conn.execute("select 1 from pg_database where datname = %s", [name]).fetchone():
                return
            stmt = sql.SQL("create database {}").format(sql.Identifier(name))
            if template:
                stmt += sql.SQL(" template {}").format(sql.Identifier(template))
            conn.execute(stmt)

    # --- helpers ---------------------------------------------------------------------------

    def _conf(self, port: int) -> dict[str, str]:
        conf = {
            "listen_addresses": "127.0.0.1",
            "port": str(port),
            "unix_socket_directories": str(self.rundir),
            "max_connections": "200",
            "cron.database_name": DATABASE,
            "cron.host": str(self.rundir),
        }
        if (self.bindir.parent / "lib" / "pg_cron.so").exists() or _pkglibdir_has(self.bindir, "pg_cron.so"):
            conf["shared_preload_libraries"] = "pg_cron"
        conf.update(self.settings)
        return conf

    def _write_conf(self, port: int) -> None:
        lines = [f"{k} = '{str(v).replace(chr(39), chr(39) * 2)}'" for k, v in self._conf(port).items()]
        path = self.datadir / "pgflight.conf"
        path.write_text(
            "# Written by pgflight at every start; edit settings in pgflight, not here.\n"
            + "\n".join(lines)
            + "\n"
        )
        self._give(path)

    def _write_port(self, port: int) -> None:
        self._portfile.write_text(f"{port}\n")

    def _clear_stale_pid(self) -> None:
        pidfile = self.datadir / "postmaster.pid"
        pid = self.pid()
        if pidfile.exists() and (pid is None or not _is_postgres(pid)):
            with contextlib.suppress(OSError):
                pidfile.unlink()

    def _give(self, path: Path) -> None:
        """As root, hand `path` to the server's OS user."""
        if os.geteuid() == 0:
            pw = pwd.getpwnam(RUN_AS)
            os.chown(path, pw.pw_uid, pw.pw_gid)

    @staticmethod
    def _server_user_may(flag: str, path: Path) -> bool:
        """As root: does the server's OS user pass ``test FLAG PATH`` (``-x`` enter, ``-w`` write)?"""
        probe = subprocess.run(
            ["runuser", "-u", RUN_AS, "--", "test", flag, str(path)], capture_output=True, check=False
        )
        return probe.returncode == 0

    def _relocate(self) -> None:
        """Put data/ and run/ where the server's OS user can reach them; record it in `server_dir`."""
        digest = hashlib.sha256(str(self.folder).encode()).hexdigest()[:12]
        name = self.folder.parent.name or "root"
        target = RELOCATED_ROOT / f"{name}-{digest}"
        for parent in (RELOCATED_ROOT.parent, RELOCATED_ROOT):
            parent.mkdir(mode=0o755, exist_ok=True)
            parent.chmod(0o755)
        target.mkdir(mode=0o700, exist_ok=True)
        self._give(target)
        self._serverfile.write_text(f"{target}\n")  # init's _check_reachable probes it next

    def _make_folders(self) -> None:
        """An empty data/ and run/ that the server's OS user owns and can reach."""
        self.folder.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:  # the server's OS user must be able to walk into it
            self.folder.chmod(self.folder.stat().st_mode | 0o711)
            if not self._server_user_may("-x", self.folder):
                self._relocate()
        if self.datadir.exists():  # a half-made cluster from an interrupted init
            shutil.rmtree(self.datadir)
        for d in (self.datadir, self.rundir):
            d.mkdir(mode=0o700, exist_ok=True)
            self._give(d)
        self._check_reachable()

    def _check_reachable(self) -> None:
        if os.geteuid() != 0 or self._server_user_may("-w", self.rundir):
            return
        raise EmbeddedError(
            f"the {RUN_AS!r} OS user cannot reach {self.server_folder}; set PGFLIGHT_HOME to a folder it can "
            "reach (e.g. under /srv or /tmp)"
        )

    def _run(self, argv: Sequence[str], *, what: str) -> str:
        if os.geteuid() == 0:
            argv = ["runuser", "-u", RUN_AS, "--", *argv]
        proc = subprocess.run(argv, capture_output=True, text=True, cwd="/", check=False)
        if proc.returncode != 0:
            detail = _last_error_line(proc.stderr + proc.stdout)
            if self.logfile.exists() and "start" in what:
                detail = _last_error_line(_tail(self.logfile)) or detail
            raise EmbeddedError(f"{what} failed in {self.folder}: {detail or 'exit ' + str(proc.returncode)}")
        return proc.stdout


def _is_postgres(pid: int) -> bool:
    """Is `pid` alive and a postgres process (not a recycled pid of something else)?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, owned by another user (the postgres user when we are not root)
    try:
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0", 1)[0]
    except OSError:
        return True  # no /proc: trust kill()
    return b"postgres" in os.path.basename(argv0) or argv0.startswith(b"postgres")


def _pkglibdir_has(bindir: Path, name: str) -> bool:
    pg_config = bindir / "pg_config"
    if not pg_config.exists():
        return False
    out = subprocess.run([str(pg_config), "--pkglibdir"], capture_output=True, text=True, check=False).stdout
    return bool(out.strip()) and (Path(out.strip()) / name).exists()


def _tail(path: Path, size: int = 4096) -> str:
    try:
        with path.open("rb") as f:
            f.seek(max(0, path.stat().st_size - size))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _last_error_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if any(tag in ln for tag in ("FATAL", "ERROR", "PANIC", "error", "could not")):
            return ln
    return lines[-1] if lines else ""
