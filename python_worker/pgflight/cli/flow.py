"""
Flow-control commands of the ``pgflight`` CLI: ``pgflight workspace`` (limits, share,
pause), ``pgflight pause`` / ``pgflight resume`` (a workspace or a recipe), ``pgflight schedule``
(add, list, remove) and ``pgflight limits`` (a recipe's rate, the global cap).

Registered onto the root app by :func:`register`; shares the connection and the ``--json``
option of :mod:`pgflight.cli.ops`.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any

import typer
from rich.markup import escape

from pgflight import errors, models_flow
from pgflight.cli.context import current
from pgflight.cli.tables import JsonOpt, Listing, dump_json
from pgflight.db import flow

# --reason as for cancel, retry and replay; --note, its first name, still works
NoteOpt = Annotated[
    str | None,
    typer.Option("--reason", "--note", metavar="TEXT", help="Why; kept in the events log with your login."),
]

workspace_app = typer.Typer(help="Workspaces: limits, fair share, pause.", no_args_is_help=True)
schedule_app = typer.Typer(help="Recurring runs: add, list, remove.", no_args_is_help=True)

Remove = Annotated[
    list[str] | None,
    typer.Option("--remove", help="Remove a limit: max-in-flight, rate or model-tokens (repeatable)."),
]


def _when(t: datetime | None) -> str:
    return "" if t is None else f"{t:%Y-%m-%d %H:%M:%S %Z}"


def _or_dash(value: Any) -> str:
    return "-" if value is None else str(value)


def workspace_show(
    name: Annotated[str | None, typer.Argument(help="Workspace (default: all).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show workspaces' limits with their in-flight, queued and parked attempts."""
    with current().connect() as c:
        rows = flow.workspace_flow(c, name)
    if as_json:
        dump_json(rows)
        return
    headers = ("in\nflight", "max", "share", "rate/s", "burst", "tokens\n/min", "queued", "parked")
    # "paused" says yes; when and by whom go on a line of their own below (no room at 80 columns)
    t = Listing("workspace", *headers, "paused", flexible=("workspace",), right=headers)
    for r in rows:
        t.add_row(
            escape(r.workspace),
            str(r.in_flight),
            _or_dash(r.max_in_flight),
            str(r.share),
            _or_dash(r.starts_per_s),
            _or_dash(r.burst),
            _or_dash(r.model_tokens_per_min),
            str(r.queued),
            str(r.parked),
            "[yellow]yes[/]" if r.paused_at else "",
        )
    current().out.print(t)
    for r in rows:
        if r.paused_at:
            current().out.print(
                f"workspace {escape(r.workspace)} [yellow]paused {_when(r.paused_at)} by"
                f" {escape(r.paused_by or '')}[/]",
                soft_wrap=True,
            )


def workspace_set(
    name: Annotated[str, typer.Argument(help="Workspace.")],
    max_in_flight: Annotated[int | None, typer.Option(help="Leased attempts at once.")] = None,
    share: Annotated[int | None, typer.Option(help="Weight in the fair claim (default 1).")] = None,
    rate: Annotated[float | None, typer.Option(help="Claims (starts) per second.")] = None,
    burst: Annotated[float | None, typer.Option(help="Most claims at once after a quiet spell.")] = None,
    model_tokens: Annotated[int | None, typer.Option(help="Model tokens per rolling minute.")] = None,
    remove: Remove = None,
    as_json: JsonOpt = False,
) -> None:
    """Set a workspace's in-flight cap, fair share, claim rate and model tokens per minute."""
    gone = set(remove or [])
    unknown = gone - {"max-in-flight", "rate", "model-tokens"}
    if unknown:
        raise typer.BadParameter(f"cannot remove {', '.join(sorted(unknown))}", param_hint="--remove")
    with current().connect() as c:
        limits = flow.set_workspace_limits(
            c,
            name,
            max_in_flight=flow.REMOVE if "max-in-flight" in gone else max_in_flight,
            share=share,
            starts_per_s=flow.REMOVE if "rate" in gone else rate,
            burst=burst,
            model_tokens_per_min=flow.REMOVE if "model-tokens" in gone else model_tokens,
        )
    if as_json:
        dump_json(limits)
        return
    current().out.print(
        f"workspace {limits.workspace}: max in flight {_or_dash(limits.max_in_flight)}, share {limits.share},"
        f" rate {_or_dash(limits.starts_per_s)}/s (burst {_or_dash(limits.burst)}),"
        f" model tokens/min {_or_dash(limits.model_tokens_per_min)}"
    )


def pause(
    workspace: Annotated[str | None, typer.Option("--workspace", "-w", help="Pause this workspace.")] = None,
    recipe: Annotated[
        str | None, typer.Option("--recipe", "-r", help="Pause this recipe everywhere.")
    ] = None,
    note: NoteOpt = None,
) -> None:
    """Pause claims of a workspace or a recipe; leased work finishes. The events log says who."""
    _toggle(workspace, recipe, note, pausing=True)


def resume(
    workspace: Annotated[str | None, typer.Option("--workspace", "-w", help="Resume this workspace.")] = None,
    recipe: Annotated[str | None, typer.Option("--recipe", "-r", help="Resume this recipe.")] = None,
    note: NoteOpt = None,
) -> None:
    """Resume claims of a paused workspace or recipe."""
    _toggle(workspace, recipe, note, pausing=False)


def _toggle(workspace: str | None, recipe: str | None, note: str | None, *, pausing: bool) -> None:
    if (workspace is None) == (recipe is None):
        raise typer.BadParameter("name exactly one of --workspace and --recipe")
    verb = "paused" if pausing else "resumed"
    with current().connect() as c:
        if workspace is not None:
            on_workspace = flow.pause_workspace if pausing else flow.resume_workspace
            changed, what = on_workspace(c, workspace, note=note), f"workspace {workspace}"
        else:
            assert recipe is not None
            on_recipe = flow.pause_recipe if pausing else flow.resume_recipe
            changed, what = on_recipe(c, recipe, note=note), f"recipe {recipe}"
    current().out.print(f"{what} {verb}" if changed else f"{what} was already {verb}")


def workspace_pause(
    name: Annotated[str, typer.Argument(help="Workspace.")],
    note: NoteOpt = None,
) -> None:
    """Pause a workspace's claims (same as `pgflight pause --workspace NAME`)."""
    _toggle(name, None, note, pausing=True)


def workspace_resume(
    name: Annotated[str, typer.Argument(help="Workspace.")],
    note: NoteOpt = None,
) -> None:
    """Resume a paused workspace (same as `pgflight resume --workspace NAME`)."""
    _toggle(name, None, note, pausing=False)


def limits(
    recipe: Annotated[str | None, typer.Option("--recipe", "-r", help="A recipe's claim rate.")] = None,
    rate: Annotated[float | None, typer.Option(help="Claims per second of --recipe (omit: remove).")] = None,
    burst: Annotated[float | None, typer.Option(help="Burst of --recipe's rate.")] = None,
    max_in_flight: Annotated[
        int | None,
        typer.Option(help="Global cap on leased attempts."),
    ] = None,
    remove_global: Annotated[bool, typer.Option(help="Remove the global in-flight cap.")] = False,
) -> None:
    """Set a recipe's claim rate (across workspaces) or the global in-flight cap."""
    with current().connect() as c:
        if recipe is not None:
            r = flow.set_recipe_limits(c, recipe, starts_per_s=rate, burst=burst)
            current().out.print(
                f"recipe {recipe}: rate {_or_dash(r.starts_per_s)}/s (burst {_or_dash(r.burst)})"
            )
        if max_in_flight is not None or remove_global:
            cap = flow.set_global_limits(c, max_in_flight=None if remove_global else max_in_flight)
            current().out.print(f"global max in flight: {_or_dash(cap)}")


def schedule_add(
    workspace: Annotated[str, typer.Argument(help="Workspace.")],
    name: Annotated[str, typer.Argument(help="Schedule name (the same name replaces it).")],
    cron: Annotated[str, typer.Argument(help='Cron: 5 fields, or 6 with seconds first: "*/5 * * * *".')],
    recipe: Annotated[str, typer.Argument(help="Recipe of each run.")],
    input_json: Annotated[str, typer.Option("--input", help="Input of each run, as JSON.")] = "{}",
    time_zone: Annotated[str, typer.Option("--tz", help="Zone whose wall clock the fields follow.")] = "UTC",
    overlap: Annotated[
        str, typer.Option(help="Previous run still running: skip, queue_one, allow.")
    ] = "skip",
    as_json: JsonOpt = False,
) -> None:
    """Add (or replace) a recurring run, fired by the engine's sweep."""
    try:
        value = json.loads(input_json)
    except json.JSONDecodeError as e:
        raise typer.BadParameter(f"not JSON: {e}", param_hint="--input") from None
    with current().connect() as c:
        created = flow.schedule_run(
            c, workspace, name, cron, recipe, value, time_zone=time_zone, overlap=overlap
        )
    if as_json:
        dump_json(created)
        return
    current().out.print(f"schedule {name} ({created.schedule_id}): next firing {_when(created.next_fire_at)}")


def schedule_list(
    workspace: Annotated[str | None, typer.Argument(help="Workspace (default: all).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """List recurring runs with their next and last firing."""
    with current().connect() as c:
        rows = flow.schedule_list(c, workspace)
    if as_json:
        dump_json(rows)
        return
    if not rows:
        current().out.print("no schedules" + (f" in workspace {escape(workspace)}" if workspace else ""))
        return
    t = Listing(
        "workspace", "name", "cron", "zone", "recipe", "overlap", "next", "last", "last run",
        flexible=("workspace", "name", "cron", "zone", "recipe"), right=("last run",),
    )  # fmt: skip
    for r in rows:
        t.add_row(
            *map(escape, (r.workspace, r.name, r.cron, r.time_zone, r.recipe, r.overlap)),
            _when(r.next_fire_at), _when(r.last_fire_at), _or_dash(r.last_run_id),
        )  # fmt: skip
    current().out.print(t)


def schedule_remove(
    workspace: Annotated[str, typer.Argument(help="Workspace.")],
    name: Annotated[str, typer.Argument(help="Schedule name.")],
) -> None:
    """Remove a recurring run; runs already submitted go on."""
    with current().connect() as c:
        removed = flow.unschedule_run(c, workspace, name)
    if not removed:
        raise errors.NotFound(f"no schedule {name!r} in workspace {workspace!r}")
    current().out.print(f"schedule {name} removed")


def flow_line(f: models_flow.WorkspaceFlow) -> str:
    """One line of a workspace's flow control, for `pgflight show`."""
    parts = [f"in flight {f.in_flight}" + (f" of {f.max_in_flight}" if f.max_in_flight is not None else "")]
    parts.append(f"share {f.share}")
    if f.starts_per_s is not None:
        parts.append(f"rate {f.starts_per_s}/s burst {f.burst}")
    if f.model_tokens_per_min is not None:
        parts.append(f"model tokens {f.model_tokens_per_min}/min")
    parts.append(f"queued {f.queued}" + (f" ({f.parked} parked behind concurrency keys)" if f.parked else ""))
    if f.paused_at is not None:
        parts.append(f"[yellow]paused {_when(f.paused_at)} by {f.paused_by}[/]")
    return f"workspace {f.workspace}: " + ", ".join(parts)


def register(app: typer.Typer) -> None:
    """Add the flow-control commands to the CLI app (after :func:`pgflight.cli.ops.register`)."""
    workspace_app.command("show")(workspace_show)
    workspace_app.command("set")(workspace_set)
    workspace_app.command("pause")(workspace_pause)
    workspace_app.command("resume")(workspace_resume)
    app.add_typer(workspace_app, name="workspace")
    schedule_app.command("add")(schedule_add)
    schedule_app.command("list")(schedule_list)
    schedule_app.command("remove")(schedule_remove)
    app.add_typer(schedule_app, name="schedule")
    app.command("pause")(pause)
    app.command("resume")(resume)
    app.command("limits")(limits)
