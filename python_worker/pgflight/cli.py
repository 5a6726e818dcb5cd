"""
The `pgflight` command.

Every command reaches the database through `_dsn()`: `PGFLIGHT_DSN` if set, else the embedded
cluster in `<PGFLIGHT_HOME or cwd>/.pgflight`. A command reports a failure by raising one of
`EXPECTED_ERRORS` (or `CliError`); `main()` prints it as one line and exits 1.

Adding a command::

    @app.command()
    def review(paths: list[Path]) -> None:
        with _connect() as conn:
            ...
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

import psycopg
import typer
from rich.console import Console
from rich.markup import escape

from pgflight import __version__, migrate
from pgflight.embedded import Cluster, EmbeddedError
from pgflight.errors import PgflightError
from pgflight.migrate import MigrationError

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)


class CliError(RuntimeError):
    """A failure to report to the user as one line (exit 1)."""


# Errors that become one line and exit 1; anything else is a bug and keeps its traceback.
EXPECTED_ERRORS: tuple[type[BaseException], ...] = (
    CliError,
    EmbeddedError,
    MigrationError,
    PgflightError,
    psycopg.Error,
)

app = typer.Typer(
    name="pgflight",
    help="Durable execution engine on PostgreSQL.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
db_app = typer.Typer(
    help="The database: the embedded cluster, or the server PGFLIGHT_DSN names.", no_args_is_help=True
)
app.add_typer(db_app, name="db")


def _external_dsn() -> str | None:
    return os.environ.get("PGFLIGHT_DSN") or None


def _cluster() -> Cluster:
    return Cluster()


def _dsn() -> str:
    """The DSN every command uses: PGFLIGHT_DSN, else the running embedded cluster."""
    external = _external_dsn()
    if external:
        return external
    cluster = _cluster()
    if not cluster.running():
        raise CliError(
            f"the database is not running ({cluster.folder}); run `pgflight db up` or set PGFLIGHT_DSN"
        )
    return cluster.dsn()


def _connect(*, autocommit: bool = True) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(_dsn(), autocommit=autocommit)


def _version_callback(value: bool) -> None:
    if value:
        out.print(f"pgflight {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version_callback, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """Durable execution engine on PostgreSQL."""


# --- db ---------------------------------------------------------------------------------------


@db_app.command("up")
def db_up() -> None:
    """Create and start the embedded cluster (reuses it if already running)."""
    if _external_dsn():
        out.print("PGFLIGHT_DSN is set: using that server, nothing to start")
        return
    cluster = _cluster()
    was_running = cluster.running()
    dsn = cluster.up()
    out.print(f"{'already running' if was_running else 'started'}: {dsn}")


@db_app.command("down")
def db_down() -> None:
    """Stop the embedded cluster."""
    if _external_dsn():
        out.print("PGFLIGHT_DSN is set: that server is not ours to stop")
        return
    cluster = _cluster()
    out.print("stopped" if cluster.stop() else "not running")


@db_app.command("status")
def db_status() -> None:
    """Say whether the database is up, where, and how many changes are deployed. Exit 3 when down."""
    external = _external_dsn()
    if not external:
        st = _cluster().status()
        if not st.initialized:
            out.print(f"no cluster in {st.folder}; run `pgflight db up`")
            raise typer.Exit(3)
        if not st.running:
            out.print(f"stopped: {st.folder}")
            raise typer.Exit(3)
        out.print(f"running: pid {st.pid}, {st.dsn}")
    dsn = external or _dsn()
    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
            version = conn.execute("show server_version").fetchone()
            out.print(f"server: PostgreSQL {version[0] if version else '?'}")
            out.print(f"schema: {_deployed(conn)}")
    except psycopg.OperationalError as e:
        if external:
            raise CliError(f"cannot reach PGFLIGHT_DSN: {_first_line(e)}") from None
        raise


def _deployed(conn: psycopg.Connection[tuple[object, ...]]) -> str:
    if conn.execute("select to_regclass('sqitch.changes') is not null").fetchone() != (True,):
        return "not deployed (run `pgflight migrate`)"
    row = conn.execute(
        "select count(*), (array_agg(change order by committed_at desc))[1]"
        " from sqitch.changes where project = 'pgflight'"
    ).fetchone()
    if not row or not row[0]:
        return "not deployed (run `pgflight migrate`)"
    return f"{row[0]} changes deployed, last {row[1]}"


@db_app.command("url")
def db_url() -> None:
    """Print the DSN."""
    out.print(_dsn(), soft_wrap=True)


@db_app.command("psql", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def db_psql(ctx: typer.Context) -> None:
    """Open psql on the database (extra arguments go to psql)."""
    dsn = _dsn()
    try:
        from pgflight.embedded import find_bindir

        psql = str(find_bindir() / "psql")
    except EmbeddedError:
        psql = "psql"
    sys.stdout.flush()
    try:
        os.execvp(psql, [psql, dsn, *ctx.args])
    except OSError as e:
        raise CliError(f"cannot run psql: {e}") from None


# --- migrate ----------------------------------------------------------------------------------


@app.command("migrate")
def migrate_cmd(
    revert: Annotated[
        bool, typer.Option("--revert", help="Revert every change instead of deploying.")
    ] = False,
    to: Annotated[str | None, typer.Option("--to", help="Stop at this change.")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Revert without asking.")] = False,
) -> None:
    """
    Deploy the schema with sqitch (deploy --verify) and install the pg_cron schedules where the
    database has pg_cron; or revert it (which deletes every run and its history).
    """
    dsn = _dsn()
    if revert:
        if not yes and not typer.confirm(
            "Revert drops schema pgflight with every run and its history. Go on?"
        ):
            raise CliError("not reverted")
        out.print(migrate.revert(dsn, to=to).rstrip(), soft_wrap=True)
        return
    out.print(migrate.deploy(dsn, to=to).rstrip(), soft_wrap=True)
    if to is None:
        why_not = migrate.install_schedules(dsn)
        out.print(
            "pg_cron schedules installed"
            if why_not is None
            else f"no pg_cron schedules ({why_not}); run pgflight.run_sweeps() from another scheduler",
            soft_wrap=True,
        )


# --- entry point ------------------------------------------------------------------------------


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def main() -> None:
    """Console entry point: run the app, turning expected failures into one line and exit 1."""
    try:
        app()
    except EXPECTED_ERRORS as e:
        err.print(f"[bold red]error:[/] {escape(_first_line(e))}", soft_wrap=True)
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None


from pgflight import cli_ops  # noqa: E402  (operating commands: worker, submit, runs, show, …)

cli_ops.register(app, _dsn)

from pgflight import cli_flow  # noqa: E402  (flow control: workspace, pause, resume, schedule, limits)

cli_flow.register(app)

from pgflight import cli_agent  # noqa: E402  (agent commands: trace, export-dataset)

cli_agent.register(app, _dsn)

from pgflight import cli_review  # noqa: E402  (the main job: review)

cli_review.register(app, _dsn)

if __name__ == "__main__":
    main()
