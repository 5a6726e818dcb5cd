"""
The ``pgflight review`` command: the main job (see :mod:`pgflight_review.job`).

Registered onto the app of :mod:`pgflight.cli` by :func:`register`, which pgflight finds through
the entry point ``review`` in group ``pgflight.cli`` (pyproject.toml). Importing this module
registers no recipe: the job (and its recipes) is imported when the command runs. It does not use the CLI's
``_dsn()``: with no ``PGFLIGHT_DSN`` it starts the embedded database itself (``pgflight db up``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Final

import typer
from rich.console import Console
from rich.markup import escape

from pgflight import errors

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)

#: The Anthropic model `--model anthropic` uses unless `PGFLIGHT_ANTHROPIC_MODEL` names another.
DEFAULT_ANTHROPIC_MODEL: Final = "claude-sonnet-4-5"


def _model(choice: str) -> tuple[str, str]:
    """
    `--model` as (provider, model name): ``offline``, ``anthropic`` or ``anthropic:<model>``.

    :raises typer.BadParameter: unknown choice, or anthropic without ANTHROPIC_API_KEY.
    """
    provider, _, name = choice.partition(":")
    if provider == "offline" and not name:
        return "offline", "offline"
    if provider == "anthropic":
        if not os.environ.get("ANTHROPIC_API_KEY"):
            raise typer.BadParameter("--model anthropic needs ANTHROPIC_API_KEY in the environment")
        return "anthropic", name or os.environ.get("PGFLIGHT_ANTHROPIC_MODEL") or DEFAULT_ANTHROPIC_MODEL
    raise typer.BadParameter(f"{choice!r}: use offline, anthropic or anthropic:<model>")


def review(
    paths: Annotated[
        list[str] | None,
        typer.Argument(help="Files and directories to review (default: this machine's legal documents)."),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option("--workers", "-n", min=1, help="Worker processes (default: CPU count, 2 to 8)."),
    ] = None,
    chaos: Annotated[
        bool, typer.Option("--chaos", help="SIGKILL a random worker every few seconds and start a new one.")
    ] = False,
    chaos_interval: Annotated[
        float, typer.Option("--chaos-interval", min=0.2, help="Seconds between chaos kills (±50 %).")
    ] = 3.0,
    model: Annotated[
        str, typer.Option("--model", help="offline (deterministic, no network) or anthropic[:<model>].")
    ] = "offline",
    out_dir: Annotated[
        Path, typer.Option("--out", help="Report folder: report.md, report.html, flags.csv, logs/.")
    ] = Path("out/review"),
) -> None:
    """
    Review a library of legal documents: one agent per document, a cited report at the end.

    Exit 0 when every document was reviewed; 1 when the run failed or some document could not be
    reviewed (the report lists them with the reason).
    """
    # imported here, not at the top: the job's module registers the review recipes
    from pgflight_review.job import ReviewError, ReviewJob, default_workers, summary_lines

    provider, model_name = _model(model)
    job = ReviewJob(
        paths=paths or [],
        out_dir=out_dir,
        workers=workers or default_workers(),
        chaos=chaos,
        chaos_interval_s=chaos_interval,
        provider=provider,
        model=model_name,
    )
    try:
        outcome = job.run(err)
    except (ReviewError, errors.PgflightError) as e:
        message = e.one_line() if isinstance(e, errors.PgflightError) else str(e)
        err.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
        raise typer.Exit(1) from None
    for line in summary_lines(outcome):
        out.print(escape(line), soft_wrap=True)
    not_reviewed = outcome.result.get("not_reviewed", 0) if isinstance(outcome.result, dict) else 0
    if not_reviewed:
        err.print(f"[yellow]{not_reviewed} documents could not be reviewed: see the report[/]")
    if outcome.status != "succeeded" or not_reviewed:
        raise typer.Exit(1)


def register(app: typer.Typer, dsn: Callable[[], str]) -> None:
    """
    Add ``review`` to the CLI app.

    :param dsn: unused: the job resolves its own database (it may start the embedded one).
    """
    del dsn
    app.command("review")(review)
