"""
`pgflight cells`: deploy N cells and one PL/Proxy database in front of them (docs/scaling.md).
"""

from __future__ import annotations

from typing import Annotated

import typer

from pgflight import cells

cells_app = typer.Typer(help="Cells behind a PL/Proxy database (docs/scaling.md).", no_args_is_help=True)


@cells_app.command("deploy")
def deploy(
    cell: Annotated[
        list[str],
        typer.Option("--cell", help="A cell's DSN as a superuser; repeat in cell order (cell 1 first)."),
    ],
    proxy: Annotated[str, typer.Option("--proxy", help="The proxy database's DSN as a superuser.")],
    migrate: Annotated[
        bool, typer.Option("--migrate/--no-migrate", help="Deploy the schema in each cell first.")
    ] = True,
    wait_sweep: Annotated[
        bool,
        typer.Option(
            "--wait-sweep/--no-wait-sweep",
            help="After scheduling, wait (up to 75 s) until each cell's pg_cron has run a sweep.",
        ),
    ] = True,
) -> None:
    """
    Deploy (or renumber-check) each cell, write the proxy's functions from cell 1's catalogue, and
    schedule each cell's sweeps with that cell's pg_cron (as `pgflight migrate` does for one database).
    """
    from pgflight import migrate as migration

    try:
        why_not = cells.deploy(cell, proxy, migrate_cells=migrate)
    except cells.CellsError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from e
    typer.echo(f"{len(cell)} cell(s) behind the proxy")
    for n, dsn in enumerate(cell, 1):
        reason = why_not.get(n)
        if reason is not None:
            typer.echo(
                f"cell {n}: sweeps not scheduled ({reason}); call `select * from pgflight.run_sweeps()`"
                " in that cell every few seconds from another scheduler."
            )
            continue
        if not wait_sweep:
            typer.echo(f"cell {n}: sweeps scheduled with pg_cron (jobs run as pgflight_cron)")
            continue
        ran, how = migration.confirm_sweep(dsn)
        if ran:
            typer.echo(f"cell {n}: sweeps scheduled with pg_cron; {how}")
        else:
            typer.echo(
                f"warning: cell {n}: {how}. pg_cron cannot run that cell's sweeps (docs/security.md#pg_cron);"
                " check its cron.job_run_details",
                err=True,
            )


@cells_app.command("map-login")
def map_login(
    proxy: Annotated[str, typer.Option("--proxy", help="The proxy database's DSN as a superuser.")],
    login: Annotated[str, typer.Argument(help="The login the proxy connects to the cells as.")],
    password: Annotated[str, typer.Option("--password", prompt=True, hide_input=True)],
) -> None:
    """The password the proxy gives the cells for one login (else the cells' pg_hba decides)."""
    cells.map_login(proxy, login, password)


@cells_app.command("place")
def place(
    proxy: Annotated[str, typer.Option("--proxy", help="The proxy database's DSN as a superuser.")],
    workspace: Annotated[str, typer.Argument(help="A workspace not created yet.")],
    cell: Annotated[int, typer.Argument(help="Its cell number.")],
) -> None:
    """Put a workspace in a cell before it is created (else the cell with the fewest workspaces;
    `cells move` moves one that exists)."""
    cells.place(proxy, workspace, cell)


@cells_app.command("move")
def move(
    proxy: Annotated[str, typer.Option("--proxy", help="The proxy database's DSN as its administrator.")],
    workspace: Annotated[str, typer.Argument(help="The workspace to move.")],
    to: Annotated[int, typer.Option("--to", help="The cell number to move it to.")],
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds to wait for its leases to end or lapse.")
    ] = 300.0,
) -> None:
    """Move a workspace to another cell with its work in flight: pause, drain, copy, switch, resume."""
    from pgflight import cells_move

    try:
        cells_move.move_workspace(proxy, workspace, to, timeout_s=timeout, say=typer.echo)
    except cells.CellsError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from e


@cells_app.command("relay")
def relay(
    proxy: Annotated[str, typer.Option("--proxy", help="The proxy database's DSN as its administrator.")],
) -> None:
    """Relay the cells' wake-ups (NOTIFY pgflight_ready) to the proxy, until SIGTERM or Ctrl-C."""
    import signal
    import threading

    from pgflight import cells_wake

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    r = cells_wake.Relay(proxy)
    r.start()
    typer.echo(f"relaying wake-ups of {len(r.cells)} cell(s) to the proxy")
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    r.stop()


def register(app: typer.Typer) -> None:
    """Add the `pgflight cells` commands to the CLI."""
    app.add_typer(cells_app, name="cells")
