"""
The ``pgflight review`` command: the main job (see :mod:`pgflight_review.job`).

Registered onto the ``pgflight`` app by :func:`register`, which pgflight finds through the entry
point ``review`` in group ``pgflight.cli`` (pyproject.toml). Importing this module registers no
recipe: the job (and its recipes) is imported when the command runs. With no ``PGFLIGHT_DSN`` the
job starts the embedded database itself (``pgflight db up``).

The command owns its worker processes: SIGTERM or SIGINT stops them (each in its own process
group) before the command exits, and it says which run was left and how to continue it.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Annotated, Final

import typer
from rich.markup import escape

from pgflight import fmt
from pgflight.cli.context import FAILED, OK, PARTIAL, CliError, Interrupted, current, on_signal, usage
from pgflight.embedded import command_name

#: The Anthropic model `--model anthropic` uses unless `PGFLIGHT_ANTHROPIC_MODEL` names another.
DEFAULT_ANTHROPIC_MODEL: Final = "claude-sonnet-4-5"
#: The OpenAI model `--model openai` uses unless `PGFLIGHT_OPENAI_MODEL` names another.
DEFAULT_OPENAI_MODEL: Final = "gpt-4.1-mini"

REVIEW_EXIT_CODES: Final = (
    "Exit codes: 0 every document found was reviewed; 1 the run failed or some document could not "
    "be reviewed (the report says which); 2 bad arguments: a path that does not exist, --out not a "
    "writable folder, or nothing to review there; 3 no database; 5 reviewed, but some of the files "
    "you named were skipped (binary, empty, unreadable, too large: the report lists them; the "
    "default scan of this machine skips such files with a warning and exit 0); 130 / 143 interrupted "
    "by SIGINT / SIGTERM: the workers are stopped and the run is left unfinished, and the same "
    "command continues it."
)


def check_out_dir(out_dir: Path) -> None:
    """
    `--out` must be a folder this process can write (created if missing), checked before submitting.

    :raises CliError: exit 2.
    """
    if out_dir.exists() and not out_dir.is_dir():
        raise usage(f"--out {out_dir} is a file; name a folder for the report")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise usage(f"--out {out_dir}: cannot create the folder ({e.strerror})") from None
    if not os.access(out_dir, os.W_OK | os.X_OK):
        raise usage(f"--out {out_dir}: the folder is not writable")


def check_paths(paths: list[str]) -> None:
    """Every path given must exist. :raises CliError: exit 2, naming the missing ones."""
    missing = [p for p in paths if not os.path.lexists(p)]
    if missing:
        raise usage(
            f"no such file or directory: {', '.join(missing)}",
            "give files or folders to review, or no path for this machine's legal documents",
        )


def _model(choice: str) -> tuple[str, str]:
    """
    `--model` as (provider, model name): ``offline``, ``anthropic[:<model>]`` or ``openai[:<model>]``.

    :raises typer.BadParameter: unknown choice, or a provider without its API key in the environment.
    """
    provider, _, name = choice.partition(":")
    if provider == "offline" and not name:
        return "offline", "offline"
    if provider == "anthropic":
        if not os.environ.get("ANTHROPIC_API_KEY"):
            raise typer.BadParameter("--model anthropic needs ANTHROPIC_API_KEY in the environment")
        return "anthropic", name or os.environ.get("PGFLIGHT_ANTHROPIC_MODEL") or DEFAULT_ANTHROPIC_MODEL
    if provider == "openai":
        if not os.environ.get("OPENAI_API_KEY"):
            raise typer.BadParameter("--model openai needs OPENAI_API_KEY in the environment")
        return "openai", name or os.environ.get("PGFLIGHT_OPENAI_MODEL") or DEFAULT_OPENAI_MODEL
    raise typer.BadParameter(f"{choice!r}: use offline, anthropic[:<model>] or openai[:<model>]")


def review(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="PATH",
            help="Files and folders to review (default: this machine's legal documents).",
            show_default=False,
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers", "-n", metavar="N", min=1, help="Worker processes (default: CPU count, 2 to 8)."
        ),
    ] = None,
    chaos: Annotated[
        bool, typer.Option("--chaos", help="SIGKILL a random worker every few seconds and start a new one.")
    ] = False,
    chaos_interval: Annotated[
        float,
        typer.Option(
            "--chaos-interval", metavar="SECONDS", min=0.2, help="Time between chaos kills (±50 %)."
        ),
    ] = 3.0,
    model: Annotated[
        str,
        typer.Option(
            "--model",
            metavar="MODEL",
            help="offline (deterministic, no network), anthropic[:NAME] or openai[:NAME].",
        ),
    ] = "offline",
    out_dir: Annotated[
        Path,
        typer.Option(
            "--out", metavar="FOLDER", help="Report folder: report.md, report.html, flags.csv, logs/."
        ),
    ] = Path("out/review"),
    sample: Annotated[
        int | None,
        typer.Option(
            "--sample",
            metavar="N",
            min=1,
            help="Review N generated documents (this machine's licence texts with custom clauses "
            "inserted, each with a known answer) written to FOLDER/sample, and score the report "
            "against the answers.",
        ),
    ] = None,
    seed: Annotated[
        int, typer.Option("--seed", metavar="S", help="Seed of --sample: the same seed, the same documents.")
    ] = 1,
) -> None:
    """
    Review a library of legal documents: one agent per document, a cited report at the end.

    The command starts its own worker processes and stops them when the run ends or when it is
    interrupted; the same command again continues an unfinished run.
    """
    cli = current()
    if sample is not None and paths:
        raise usage("--sample makes its own documents: give no PATH with it")
    check_paths(paths or [])
    check_out_dir(out_dir)
    provider, model_name = _model(model)
    # imported here, not at the top: the job's module registers the review recipes
    from pgflight_review.job import NothingToReview, ReviewError, ReviewJob, default_workers, summary_lines

    library = None
    if sample is not None:
        from pgflight_review.sample import make_sample

        library = make_sample(out_dir / "sample", sample, seed=seed)
        cli.err.print(
            escape(
                f"sample: {fmt.count(library.documents, 'document')} made from "
                f"{fmt.count(library.bases, 'licence text')} of this machine (seed {seed}) in "
                f"{library.docs}; answers in {library.answers_file}"
            ),
            soft_wrap=True,
        )
    job = ReviewJob(
        paths=[str(library.docs)] if library else paths or [],
        out_dir=out_dir,
        workers=workers or default_workers(),
        chaos=chaos,
        chaos_interval_s=chaos_interval,
        provider=provider,
        model=model_name,
    )
    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        outcome = job.run(cli.err)
    except Interrupted as e:
        if job.run_id is None:
            cli.err.print(f"interrupted ({e}) before a run was submitted: nothing was left behind")
        else:
            cli.err.print(
                f"interrupted ({e}): the workers are stopped; run {job.run_id} is left unfinished. "
                f"Run the same command again to continue it, or `{command_name()} cancel "
                f"{job.run_id}` to drop it.",
                soft_wrap=True,
            )
        raise typer.Exit(e.code) from None
    except NothingToReview as e:
        raise usage(str(e), "give files or folders holding text documents") from None
    except ReviewError as e:
        raise CliError(str(e), code=FAILED) from None
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    for line in summary_lines(outcome):
        cli.out.print(escape(line), soft_wrap=True)
    res = outcome.result if isinstance(outcome.result, dict) else {}
    if library is not None and res.get("csv"):
        from pgflight_review.sample import CHECK_FILE, score

        check = score(library.answers_file, Path(str(res["csv"])))
        (out_dir / CHECK_FILE).write_text(json.dumps(check.as_dict(), indent=1) + "\n", encoding="utf-8")
        for line in check.lines():
            cli.out.print(escape(line), soft_wrap=True)
    not_reviewed = int(res.get("not_reviewed") or 0)
    if not_reviewed:
        cli.err.print(
            f"[yellow]{fmt.count(not_reviewed, 'document')} could not be reviewed: see the report[/]"
        )
    if outcome.status != "succeeded" or not_reviewed:
        raise typer.Exit(FAILED)
    if outcome.skipped:
        # Files the user named that were skipped are a partial result (exit 5); the default scan of
        # this machine always meets a few (binaries, files over the size cap): a warning, exit 0.
        named = bool(paths)
        cli.err.print(
            f"[yellow]{fmt.count(outcome.skipped, 'file')} skipped (binary, empty, unreadable or too large):"
            f" see the report{'; exit 5' if named else ''}[/]",
            soft_wrap=True,
        )
        if named:
            raise typer.Exit(PARTIAL)
    raise typer.Exit(OK)


def register(app: typer.Typer) -> None:
    """Add ``review`` to the ``pgflight`` app (entry point ``pgflight.cli``: ``review``)."""
    app.command("review", epilog=REVIEW_EXIT_CODES)(review)
