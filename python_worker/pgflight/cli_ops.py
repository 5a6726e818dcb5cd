"""
Operating commands of the ``pgflight`` CLI: the worker, submitting and inspecting runs.

Registered onto the app of :mod:`pgflight.cli` by :func:`register`. Every read command takes
``--json`` (machine-readable output, one JSON document). An API refusal (a
:class:`~pgflight.errors.PgflightError`) prints one line, the message and its hint, and exits 1.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Annotated, Any, TypeVar

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.tree import Tree

from pgflight import db, errors, models

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)
F = TypeVar("F", bound=Callable[..., Any])

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
_dsn_fn: Callable[[], str] = lambda: os.environ.get("PGFLIGHT_DSN", "")  # noqa: E731

STATUS_STYLE = {
    "succeeded": "green",
    "dead_letter": "red",
    "failed": "red",
    "cancelled": "yellow",
    "running": "cyan",
    "claimed": "cyan",
    "queued": "white",
    "awaiting_children": "magenta",
    "awaiting_approval": "magenta",
    "cancel_requested": "yellow",
    "lease_expired": "red",
}


def _one_line_errors(fn: F) -> F:
    """Print a PgflightError as one line (message and hint) and exit 1, without a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except errors.PgflightError as e:
            err.print(f"[bold red]error:[/] {escape(e.one_line())}", soft_wrap=True)
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]


@contextmanager
def _conn() -> Iterator[db.Connection]:
    from pgflight.db.connection import connect

    with connect(_dsn_fn(), application_name="pgflight-cli") as c:
        yield c


def _dump(value: BaseModel | Sequence[BaseModel] | dict[str, Any]) -> None:
    if isinstance(value, BaseModel):
        data: Any = value.model_dump(mode="json")
    elif isinstance(value, dict):
        data = value
    else:
        data = [v.model_dump(mode="json") for v in value]
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def _style(status: str) -> str:
    return f"[{STATUS_STYLE.get(status, 'white')}]{status}[/]"


def _dur(start: datetime | None, end: datetime | None) -> str:
    if start is None:
        return ""
    end = end or datetime.now(start.tzinfo)
    return f"{(end - start).total_seconds():.2f}s"


def _short(value: Any, n: int = 60) -> str:
    text = json.dumps(value, default=str) if value is not None else ""
    return text if len(text) <= n else text[: n - 1] + "…"


# --- commands ----------------------------------------------------------------------------------


def worker(
    recipes: Annotated[
        str, typer.Option("--recipes", help="Recipe modules to import, separated by ':' or ','.")
    ],
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", help="Steps run at once.")] = 4,
    batch_size: Annotated[int | None, typer.Option("--batch-size", help="Most steps per claim.")] = None,
    lease: Annotated[float, typer.Option("--lease", help="Lease in seconds.")] = 30.0,
    grace: Annotated[float, typer.Option("--grace", help="Seconds running steps get after SIGTERM.")] = 10.0,
    heartbeat: Annotated[
        float | None, typer.Option("--heartbeat", help="Heartbeat interval, s (≤ lease/3).")
    ] = None,
    poll: Annotated[float, typer.Option("--poll", help="Poll interval in seconds while LISTEN works.")] = 2.0,
    listen_dsn: Annotated[
        str | None,
        typer.Option(
            "--listen-dsn", envvar="PGFLIGHT_LISTEN_DSN", help="Direct DSN for LISTEN (default: the DSN)."
        ),
    ] = None,
    no_listen: Annotated[bool, typer.Option("--no-listen", help="Poll only.")] = False,
    pool_size: Annotated[int, typer.Option("--pool-size", help="Control-pool connections.")] = 2,
    name: Annotated[str | None, typer.Option("--name", help="Worker name (default host:pid).")] = None,
    log_level: Annotated[str, typer.Option("--log-level", help="DEBUG, INFO, WARNING.")] = "INFO",
) -> None:
    """Run a worker until SIGTERM / SIGINT: claim, run, heartbeat, complete."""
    from pgflight.recipes import load_modules
    from pgflight.worker import Worker

    logging.basicConfig(
        level=log_level.upper(), stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    modules = [m for part in recipes.split(":") for m in part.split(",") if m.strip()]
    sys.path.insert(0, os.getcwd())
    w = Worker(
        _dsn_fn(),
        load_modules(modules),
        concurrency=concurrency,
        batch_size=batch_size,
        lease_s=lease,
        heartbeat_s=heartbeat,
        grace_s=grace,
        poll_s=poll,
        listen_dsn=listen_dsn,
        listen=not no_listen,
        pool_size=pool_size,
        name=name,
    )
    w.run()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # step threads still running after their release must not hold the process


@_one_line_errors
def submit(
    recipe: Annotated[str, typer.Argument(help="Recipe name.")],
    input_json: Annotated[str, typer.Argument(help="The input, as JSON.")] = "{}",
    workspace: Annotated[
        str, typer.Option("--workspace", "-w", help="Workspace (created if missing).")
    ] = "default",
    key: Annotated[str | None, typer.Option("--key", help="Idempotency key.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Submit a run; print its id."""
    try:
        value = json.loads(input_json)
    except json.JSONDecodeError as e:
        raise errors.BadArgument(f"INPUT_JSON is not JSON: {e}") from None
    with _conn() as c:
        db.create_workspace(c, workspace)
        r = db.submit_run(c, workspace, recipe, value, idempotency_key=key)
    if as_json:
        _dump(r)
    else:
        out.print(
            f"run {r.run_id} {'submitted' if r.created else 'already submitted (same key)'}"
            f" (step {r.step_id})"
        )


@_one_line_errors
def runs(
    limit: Annotated[int, typer.Option("--limit", "-n", help="Show at most this many.")] = 20,
    status: Annotated[
        str | None, typer.Option("--status", help="running, succeeded, failed, cancelled")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """List recent runs."""
    with _conn() as c:
        rows = db.list_runs(c, limit=limit, status=status)
    if as_json:
        _dump(rows)
        return
    t = Table("run", "workspace", "recipe", "status", "created", "took")
    for r in rows:
        t.add_row(
            str(r.run_id),
            r.workspace,
            r.recipe,
            _style(r.status),
            f"{r.created_at:%Y-%m-%d %H:%M:%S}",
            _dur(r.created_at, r.finished_at),
        )
    out.print(t)


@_one_line_errors
def show(run: Annotated[int, typer.Argument(help="Run id.")], as_json: JsonOpt = False) -> None:
    """Show a run as a tree of steps with status, attempts and durations, and its workspace's caps."""
    from pgflight import cli_flow
    from pgflight.db import flow

    with _conn() as c:
        st = db.run_status(c, run)
        steps = db.run_steps(c, run)
        caps = flow.workspace_flow(c, st.workspace)
    if as_json:
        _dump(
            {
                "run": st.model_dump(mode="json"),
                "steps": [s.model_dump(mode="json") for s in steps],
                "workspace_flow": caps[0].model_dump(mode="json") if caps else None,
            }
        )
        return
    out.print(_tree(st, steps))
    if caps:
        out.print(cli_flow.flow_line(caps[0]))


def _tree(st: models.RunStatus, steps: list[models.StepState]) -> Tree:
    root = Tree(
        f"run {st.run_id} [bold]{st.recipe}[/] {_style(st.status)} · {st.steps_total} steps, "
        f"{st.attempts_total} attempts · {_dur(st.created_at, st.finished_at)}"
    )
    nodes: dict[int | None, Tree] = {None: root}
    children_of: dict[int | None, list[models.StepState]] = {}
    for s in steps:
        children_of.setdefault(s.parent_id, []).append(s)
    stack: list[int | None] = [None]
    while stack:
        parent = stack.pop()
        kids = children_of.get(parent, [])
        shown = kids if len(kids) <= 50 else kids[:50]
        for s in shown:
            label = (
                f"{escape(s.step_key)} [dim]step {s.step_id}[/] [bold]{s.recipe}[/] {_style(s.status)}"
                f" attempt {s.attempt_no}"
                f" {_dur(s.started_at or s.claimed_at, s.finished_at)}"
            )
            if s.error:
                message = s.error.get("message") if isinstance(s.error, dict) else s.error
                label += f" [red]{escape(_short(message))}[/]"
            elif s.result is not None:
                label += f" → {escape(_short(s.result))}"
            nodes[s.step_id] = nodes[parent].add(label)
            stack.append(s.step_id)
        if len(kids) > len(shown):
            nodes[parent].add(f"… {len(kids) - len(shown)} more")
    return root


@_one_line_errors
def events(
    run: Annotated[int, typer.Argument(help="Run id.")],
    limit: Annotated[int, typer.Option("--limit", "-n", help="Show at most this many.")] = 1000,
    as_json: JsonOpt = False,
) -> None:
    """The transition log of a run."""
    with _conn() as c:
        db.run_status(c, run)  # ZF003 for an unknown run
        rows = db.run_events(c, run, limit=limit)
    if as_json:
        _dump(rows)
        return
    t = Table("id", "at", "step", "attempt", "from", "to", "reason", "worker", "detail")
    for e in rows:
        t.add_row(
            str(e.id),
            f"{e.at:%H:%M:%S.%f}"[:-3],
            str(e.step_id or ""),
            str(e.attempt_id or ""),
            e.from_status or "",
            e.to_status or "",
            e.reason,
            str(e.worker_id or ""),
            escape(_short(e.detail)),
        )
    out.print(t)


@_one_line_errors
def cancel(run: Annotated[int, typer.Argument(help="Run id.")], as_json: JsonOpt = False) -> None:
    """Cancel a run: every unfinished step stops."""
    with _conn() as c:
        r = db.cancel_run(c, run, actor=_actor(), reason="cli")
    if as_json:
        _dump(r)
    elif r.was_running:
        out.print(
            f"run {run} cancelled: {r.cancelled} attempt(s) cancelled, {r.cancel_requested} asked to stop"
        )
    else:
        out.print(f"run {run} had already finished: nothing to cancel")


@_one_line_errors
def approve(
    step: Annotated[int, typer.Argument(help="Step id.")],
    decision: Annotated[str, typer.Argument(help="approve or reject")],
    note: Annotated[str | None, typer.Option("--note")] = None,
    gate: Annotated[str | None, typer.Option("--gate", help="Gate key (default: the pending one).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Decide a step's approval gate."""
    with _conn() as c:
        r = db.approve(c, step, decision, _actor(), note=note, gate_key=gate)
    if as_json:
        _dump(r)
    else:
        out.print(
            f"step {r.step_id} gate {r.gate_key}: {r.decision}{'' if r.applied else ' (already decided so)'}"
        )


@_one_line_errors
def retry(
    step: Annotated[int, typer.Argument(help="Step id (dead-lettered).")], as_json: JsonOpt = False
) -> None:
    """Give a dead-lettered step a fresh attempt."""
    with _conn() as c:
        a = db.retry_step(c, step, actor=_actor())
    _dump({"step_id": step, "attempt_id": a}) if as_json else out.print(f"step {step}: new attempt {a}")


@_one_line_errors
def replay(
    step: Annotated[int, typer.Argument(help="Step id (finished).")], as_json: JsonOpt = False
) -> None:
    """Run a finished step again, then what depends on it."""
    with _conn() as c:
        a = db.replay_from(c, step, actor=_actor())
    _dump({"step_id": step, "attempt_id": a}) if as_json else out.print(
        f"step {step}: replaying as attempt {a}"
    )


@_one_line_errors
def dead_letters(
    limit: Annotated[int, typer.Option("--limit", "-n", help="Show at most this many.")] = 50,
    as_json: JsonOpt = False,
) -> None:
    """Dead-lettered steps with their last error."""
    with _conn() as c:
        rows = db.dead_letters(c, limit=limit)
    if as_json:
        _dump(rows)
        return
    if not rows:
        out.print("no dead letters")
        return
    t = Table("step", "run", "key", "recipe", "attempts", "reason", "error")
    for d in rows:
        msg = d.error.get("message") if isinstance(d.error, dict) else d.error
        t.add_row(
            str(d.step_id),
            str(d.run_id),
            escape(d.step_key),
            d.recipe,
            str(d.attempt_no),
            d.reason or "",
            escape(_short(msg, 80)),
        )
    out.print(t)


@_one_line_errors
def watch(
    run: Annotated[int, typer.Argument(help="Run id.")],
    interval: Annotated[float, typer.Option("--interval", help="Seconds between polls.")] = 0.5,
    timeout: Annotated[float | None, typer.Option("--timeout", help="Give up after seconds.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """A live progress bar until the run ends (exit 1 unless it succeeded)."""
    start = time.monotonic()
    with _conn() as c:
        st = db.run_status(c, run)
        with Progress(
            TextColumn("run {task.fields[run]} {task.fields[status]}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=err,
            disable=as_json,
        ) as progress:
            task = progress.add_task(
                "run", total=max(st.steps_total, 1), run=run, status=st.status, detail=""
            )
            while True:
                st = db.run_status(c, run)
                done = st.steps_succeeded + st.steps_dead_letter + st.steps_cancelled
                progress.update(
                    task,
                    total=max(st.steps_total, 1),
                    completed=done,
                    status=st.status,
                    detail=f"running {st.steps_running} waiting {st.steps_waiting} "
                    f"dead {st.steps_dead_letter}",
                )
                if st.status != "running":
                    break
                if timeout is not None and time.monotonic() - start > timeout:
                    raise errors.PgflightError(f"run {run} still running after {timeout:g}s")
                time.sleep(interval)
    if as_json:
        _dump(st)
    else:
        out.print(
            f"run {run} {_style(st.status)}"
            + (f": {escape(_short(st.result, 200))}" if st.result else "")
            + (f": {escape(_short(st.error, 200))}" if st.error else "")
        )
    if st.status != "succeeded":
        raise typer.Exit(1)


def _actor() -> str:
    return os.environ.get("PGFLIGHT_ACTOR") or os.environ.get("USER") or "cli"


def register(app: typer.Typer, dsn: Callable[[], str]) -> None:
    """
    Add the operating commands to the CLI app.

    :param dsn: returns the DSN every command connects to.
    """
    global _dsn_fn
    _dsn_fn = dsn
    app.command("worker")(worker)
    for fn in (submit, runs, show, events, cancel, approve, retry, replay, watch):
        app.command(fn.__name__)(fn)
    app.command("dead-letters")(dead_letters)
