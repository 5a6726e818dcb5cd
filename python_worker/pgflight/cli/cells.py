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
) -> None:
    """Deploy (or renumber-check) each cell, then write the proxy's functions from cell 1's catalogue."""
    try:
        cells.deploy(cell, proxy, migrate_cells=migrate)
    except cells.CellsError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from e
    typer.echo(f"{len(cell)} cell(s) behind the proxy")


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
    """Put a workspace in a cell before it is created (else the cell with the fewest workspaces)."""
    cells.place(proxy, workspace, cell)


def register(app: typer.Typer) -> None:
    """Add the `pgflight cells` commands to the CLI."""
    app.add_typer(cells_app, name="cells")
