"""
The ``pgflight`` command: the root app, the database commands and the entry point.

Every command reaches the database through the :class:`~pgflight.cli.context.Cli` of
:func:`~pgflight.cli.context.current`: ``PGFLIGHT_DSN`` if set, else the embedded cluster in
``<PGFLIGHT_HOME or cwd>/.pgflight``. A command reports a failure by raising; :func:`main` prints
it through :func:`~pgflight.cli.context.report` and exits with the documented code.

Other packages add commands through the entry point group ``pgflight.cli`` (:data:`PLUGIN_GROUP`):
each entry point names a ``register(app)`` function (the review example:
``review = "pgflight_review.cli:register"``).
"""

from __future__ import annotations

import os
import re
import signal
import sys
from importlib.metadata import entry_points
from typing import Annotated, Final

import psycopg
import typer
import typer.core
from rich.markup import escape

from pgflight import __version__, logs, migrate
from pgflight.cli.context import (
    EXIT_CODES,
    EXPECTED,
    NO_DATABASE,
    CliError,
    Interrupted,
    current,
    describe,
    on_signal,
    report,
    usage,
)
from pgflight.embedded import RUN_AS, Cluster, EmbeddedError, command_name

#: Entry point group of CLI plugins.
PLUGIN_GROUP: Final = "pgflight.cli"


def _argument_usage(self: typer.core.TyperArgument) -> str:
    name = self.display_name_raw
    name = name if self.required else f"[{name}]"
    return name + ("..." if self.nargs != 1 else "")


# Help for people: arguments show as RECIPE / [INPUT] rather than typer's {recipe} and <str>.
typer.core.TyperArgument._usage_display_name = _argument_usage  # type: ignore[method-assign]
typer.core.TyperArgument.display_type = lambda self, ctx: ""  # type: ignore[method-assign]

app = typer.Typer(
    name="pgflight",
    help="Durable execution engine on PostgreSQL.",
    epilog=EXIT_CODES,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,  # click's help: paragraphs re-wrapped to the terminal, defaults shown
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
db_app = typer.Typer(
    help="The database: the embedded cluster, or the server PGFLIGHT_DSN names.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(db_app, name="db")


def _version_callback(value: bool) -> None:
    if value:
        current().out.print(f"pgflight {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Say which database the command uses (on stderr).")
    ] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version_callback, is_eager=True, help="Print the version.")
    ] = False,
    log_format: Annotated[
        str,
        typer.Option(
            "--log-format",
            envvar="PGFLIGHT_LOG_FORMAT",
            help="Logs and failures as text or json (one object a line).",
        ),
    ] = "text",
) -> None:
    """Durable execution engine on PostgreSQL."""
    current().verbose = verbose
    try:
        logs.set_format(log_format)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--log-format") from None


# --- db ---------------------------------------------------------------------------------------


def _external_dsn() -> str | None:
    return os.environ.get("PGFLIGHT_DSN") or None


@db_app.command("up")
def db_up() -> None:
    """Create and start the embedded cluster (reuses it if already running)."""
    cli = current()
    if _external_dsn():
        cli.out.print("PGFLIGHT_DSN is set: using that server, nothing to start")
        return
    cluster = Cluster()
    was_running = cluster.running()
    dsn = cluster.up()
    cli.out.print(f"{'already running' if was_running else 'started'}: {dsn}", soft_wrap=True)
    _say_where_the_data_lives(cluster)


def _say_where_the_data_lives(cluster: Cluster) -> None:
    if cluster.server_folder != cluster.folder:
        current().out.print(
            f"data: {cluster.server_folder} (the {RUN_AS} OS user cannot enter {cluster.folder})",
            soft_wrap=True,
        )


@db_app.command("down")
def db_down() -> None:
    """Stop the embedded cluster."""
    cli = current()
    if _external_dsn():
        cli.out.print("PGFLIGHT_DSN is set: that server is not ours to stop")
        return
    cli.out.print("stopped" if Cluster().stop() else "not running")


@db_app.command("status")
def db_status() -> None:
    """
    Say which database the commands use, whether it is up, and how many changes are deployed.

    Exit 3 when it is down or unreachable.
    """
    cli = current()
    external = _external_dsn()
    if external:
        cli.out.print(f"database: PGFLIGHT_DSN: {describe(external)}", soft_wrap=True)
    else:
        cluster = Cluster()
        st = cluster.status()
        cli.out.print(f"database: embedded cluster in {st.folder}", soft_wrap=True)
        _say_where_the_data_lives(cluster)
        if not st.initialized:
            cli.out.print(f"no cluster there; create it with `{command_name()} db up`")
            raise typer.Exit(NO_DATABASE)
        if not st.running:
            cli.out.print(f"stopped; start it with `{command_name()} db up`")
            raise typer.Exit(NO_DATABASE)
        cli.out.print(f"running: pid {st.pid}, {st.dsn}", soft_wrap=True)
    with psycopg.connect(cli.dsn(), autocommit=True, connect_timeout=5) as conn:
        version = conn.execute("show server_version").fetchone()
        cli.out.print(f"server: PostgreSQL {version[0] if version else '?'}")
        cli.out.print(f"schema: {_deployed(conn)}", soft_wrap=True)


def _need_extra(extra: str, what: str) -> None:
    """Refuse in one line when an extra's packages are not installed (the engine package alone lacks them)."""
    import importlib.util

    modules = {"inspector": ("starlette", "uvicorn", "jinja2", "prometheus_client", "multipart")}[extra]
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise CliError(
            f"{what} needs the packages of pgflight[{extra}] (missing: {', '.join(missing)})",
            hint=f"pip install 'pgflight[{extra}]'",
        )


def _deployed(conn: psycopg.Connection[tuple[object, ...]]) -> str:
    # the release is the newest deployed tag of sqitch.plan (@v0.9.0); changes deployed after it
    # are unreleased work (a development checkout)
    try:
        if conn.execute("select to_regclass('sqitch.changes') is not null").fetchone() != (True,):
            return f"not deployed (run `{command_name()} migrate`)"
        row = _registry(conn)
    except psycopg.errors.InsufficientPrivilege:
        # sqitch's registry is the installer's: an operator or reader login may not read it
        deployed = conn.execute("select to_regnamespace('pgflight') is not null").fetchone() == (True,)
        if not deployed:
            return f"not deployed (run `{command_name()} migrate`)"
        return "deployed (sqitch's registry is the installer's: this login may not read which changes)"
    if not row or not row[0]:
        return f"not deployed (run `{command_name()} migrate`)"
    count, last, tag, after = row
    if tag is None:
        return f"{count} changes deployed, last {last}"
    later = f" and {after} later change{'' if after == 1 else 's'}" if after else ""
    return f"release {tag}{later} ({count} changes deployed, last {last})"


def _registry(conn: psycopg.Connection[tuple[object, ...]]) -> tuple[object, ...] | None:
    """sqitch's registry of the pgflight project: (changes, the last, the newest tag, changes after it)."""
    return conn.execute(
        "with t as (select tag, committed_at from sqitch.tags where project = 'pgflight'"
        "            order by committed_at desc limit 1)"
        " select count(*), (array_agg(c.change order by c.committed_at desc))[1], (select tag from t),"
        "        count(*) filter (where c.committed_at > (select committed_at from t))"
        "   from sqitch.changes c where c.project = 'pgflight'"
    ).fetchone()


@db_app.command("url")
def db_url() -> None:
    """Print the DSN."""
    cli = current()
    cli.out.print(cli.dsn(), soft_wrap=True)


@db_app.command("psql", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def db_psql(ctx: typer.Context) -> None:
    """Open psql on the database (extra arguments go to psql)."""
    dsn = current().dsn()
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
    to: Annotated[str | None, typer.Option("--to", metavar="CHANGE", help="Stop at this change.")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Revert without asking.")] = False,
    wait_sweep: Annotated[
        bool,
        typer.Option(
            "--wait-sweep/--no-wait-sweep",
            help="After installing the schedules, wait (up to 75 s) until pg_cron has run a sweep.",
        ),
    ] = True,
) -> None:
    """
    Deploy the schema with sqitch (deploy --verify) and install the pg_cron schedules where the
    database has pg_cron, then confirm that pg_cron really runs them; or revert it (which deletes
    every run and its history). A database deployed by pgflight 0.9.x is upgraded: the 0.9 plan's
    last changes, a check of its schema, and this plan recorded in sqitch's registry.
    """
    cli = current()
    dsn = cli.dsn()
    if revert:
        if not yes and not typer.confirm(
            "Revert drops schema pgflight with every run and its history. Go on?"
        ):
            raise CliError("not reverted")
        cli.out.print(escape(migrate.revert(dsn, to=to).rstrip()), soft_wrap=True)
        return
    # without --to, a database of the 0.9 plan is upgraded to this one first (migrate.upgrade)
    done = migrate.deploy(dsn, to=to) if to else migrate.upgrade(dsn)
    cli.out.print(escape(_without_notices(done)), soft_wrap=True)
    if to is None:
        why_not = migrate.install_schedules(dsn)
        if why_not is None:
            cli.out.print("sweeps: scheduled with pg_cron (jobs run as pgflight_cron)")
            if wait_sweep:
                cli.out.print("waiting for pg_cron to run a sweep …")
                ran, how = migrate.confirm_sweep(dsn)
                if ran:
                    cli.out.print(escape(how), soft_wrap=True)
                else:
                    cli.err.print(
                        f"[bold red]warning:[/] {escape(how)}. pg_cron cannot run the sweeps: let it reach"
                        " the server without a password (cron.use_background_workers = on, or the unix"
                        " socket with a peer map for pgflight_cron; docs/security.md#pg_cron) and check"
                        " cron.job_run_details",
                        soft_wrap=True,
                    )
        else:
            cli.out.print(
                f"sweeps: not scheduled ({escape(why_not)}); call `select * from pgflight.run_sweeps()`"
                " every few seconds from another scheduler.",
                soft_wrap=True,
            )


def _without_notices(output: str) -> str:
    """sqitch's output without psql's NOTICE lines (the pg_cron one is said once, plainly, after)."""
    return "\n".join(ln for ln in output.rstrip().splitlines() if not _NOTICE_RX.match(ln))


_NOTICE_RX: Final = re.compile(r"^psql:\S+: NOTICE: ")


# --- inspector and metrics --------------------------------------------------------------------


@app.command("ui")
def ui_cmd(
    host: Annotated[
        str,
        typer.Option(help="Address to bind (localhost by default; any other needs --auth login)."),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to serve on.")] = 8765,
    auth: Annotated[
        str,
        typer.Option(
            metavar="none|login",
            help="none: every page acts as the PGFLIGHT_DSN login (loopback binds only);"
            " login: visitors sign in with a database login and password and act as that login.",
        ),
    ] = "none",
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-host",
            metavar="NAME",
            help="A host name visitors use to reach the inspector (repeatable); requests naming"
            " any other host than these, the bound one and the loopback names are refused.",
        ),
    ] = None,
    tls_cert: Annotated[
        str | None, typer.Option(metavar="FILE", help="TLS certificate file (PEM): serve https.")
    ] = None,
    tls_key: Annotated[
        str | None, typer.Option(metavar="FILE", help="TLS private key file (PEM) for --tls-cert.")
    ] = None,
) -> None:
    """Open the run inspector: runs, steps, transcripts, dead letters, approvals, workers, queues, costs."""
    _need_extra("inspector", "the inspector")
    from pgflight.inspector import guard, serve

    cli = current()
    allow = allow_host or []
    try:
        guard.check_bind(host, auth, allow)
    except guard.Refused as e:
        raise usage(str(e), hint="see docs/inspector.md") from None
    if (tls_cert is None) != (tls_key is None):
        raise usage("--tls-cert and --tls-key go together")
    dsn = cli.dsn()
    logs.setup("INFO")
    scheme = "https" if tls_cert else "http"
    shown = f"[{host}]" if ":" in host else host
    cli.out.print(
        f"pgflight inspector on {scheme}://{shown}:{port}/ (Ctrl-C stops it)", soft_wrap=True, markup=False
    )
    if auth == "login" and not guard.is_loopback(host) and not tls_cert:
        cli.err.print(
            "warning: passwords and session cookies cross the network in clear text; serve with"
            " --tls-cert/--tls-key or behind a TLS-terminating proxy",
            soft_wrap=True,
        )
    serve(dsn, host=host, port=port, auth=auth, allow_hosts=allow, tls_cert=tls_cert, tls_key=tls_key)


@app.command("metrics")
def metrics_cmd(
    host: Annotated[str, typer.Option(help="Address to bind (localhost by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to serve /metrics on.")] = 9187,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-host",
            metavar="NAME",
            help="A host name scrapers use to reach the exporter (repeatable); requests naming any"
            " other host than these, the bound one and the loopback names answer 421.",
        ),
    ] = None,
) -> None:
    """Serve Prometheus metrics of the database on /metrics."""
    _need_extra("inspector", "the metrics endpoint")
    from pgflight.inspector import guard, serve_metrics
    from pgflight.inspector.metrics import check_metrics_bind

    cli = current()
    allow = allow_host or []
    try:
        check_metrics_bind(host, allow)
    except guard.Refused as e:
        raise usage(str(e), hint="see docs/inspector.md") from None
    dsn = cli.dsn()
    logs.setup("INFO")
    cli.out.print(f"pgflight metrics on http://{host}:{port}/metrics (Ctrl-C stops it)", soft_wrap=True)
    serve_metrics(dsn, host=host, port=port, allow_hosts=allow)


# --- entry point ------------------------------------------------------------------------------


def main() -> None:
    """Console entry point: run the app; an expected failure prints one line and its exit code."""
    signal.signal(signal.SIGINT, on_signal)  # exit 130, not click's "Aborted!" and 1
    try:
        app()
    except Interrupted as e:
        current().err.print(f"interrupted ({e})")
        raise SystemExit(e.code) from None
    except EXPECTED as e:
        raise SystemExit(report(e)) from None


def _load_plugins() -> None:
    """
    Add the commands other packages declare in entry point group ``pgflight.cli``.

    Loading one must not register recipes: a plugin imports its recipes when its command runs.
    """
    for ep in entry_points(group=PLUGIN_GROUP):
        ep.load()(app)


from pgflight.cli import agent, cells, flow, ops  # noqa: E402  (the commands of the other modules)

ops.register(app)
agent.register(app)
cells.register(app)  # cells behind a PL/Proxy database
flow.register(app)  # flow control: workspace, pause, resume, schedule, limits
_load_plugins()
