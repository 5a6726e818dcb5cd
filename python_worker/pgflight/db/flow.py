"""
The typed client of the flow-control SQL API: one function per SQL function, plus the
two reader views. Limits passed as ``None`` are left as they are; :data:`REMOVE` removes one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from psycopg.types.json import Jsonb

from pgflight import models_flow as m
from pgflight.db.core import Connection, _one, _rows, _scalar

__all__ = [
    "REMOVE",
    "fire_schedules",
    "pause_recipe",
    "pause_workspace",
    "resume_recipe",
    "resume_workspace",
    "schedule_list",
    "schedule_run",
    "set_global_limits",
    "set_recipe_limits",
    "set_workspace_limits",
    "unschedule_run",
    "wake_parked_keys",
    "workspace_flow",
]


class _Remove:
    def __repr__(self) -> str:
        return "REMOVE"


REMOVE: Final = _Remove()
"""Pass as a limit to remove it (sent as JSON null)."""


def _limits(**named: Any) -> Jsonb:
    return Jsonb({k: (None if v is REMOVE else v) for k, v in named.items() if v is not None})


def set_workspace_limits(
    conn: Connection,
    workspace: str,
    *,
    max_in_flight: int | _Remove | None = None,
    share: int | None = None,
    starts_per_s: float | _Remove | None = None,
    burst: float | None = None,
    model_tokens_per_min: int | _Remove | None = None,
) -> m.WorkspaceLimits:
    """
    Set a workspace's flow limits; the fair claim applies them from its next call.

    :param max_in_flight: leased attempts at once.
    :param share: weight in the fair claim (default 1).
    :param starts_per_s: claims per second, with `burst` (default max(1, starts_per_s)).
    :param model_tokens_per_min: model tokens (input + output) per rolling minute.
    :return: the limits now in force.
    :raises BadArgument: an out-of-range value (22023).
    :raises NotFound: unknown workspace (ZF003).
    """
    return _one(
        conn,
        "select * from pgflight.set_workspace_limits(%s, %s)",
        [
            workspace,
            _limits(
                max_in_flight=max_in_flight,
                share=share,
                starts_per_s=starts_per_s,
                burst=burst,
                model_tokens_per_min=model_tokens_per_min,
            ),
        ],
        m.WorkspaceLimits,
    )


def set_recipe_limits(
    conn: Connection, recipe: str, *, starts_per_s: float | None, burst: float | None = None
) -> m.RecipeLimits:
    """
    Set (or with ``starts_per_s=None`` remove) a recipe's claim rate across all workspaces.

    :return: the recipe's limits now in force.
    :raises BadArgument: an out-of-range value (22023).
    """
    options: dict[str, Any] = {"starts_per_s": starts_per_s}
    if burst is not None:
        options["burst"] = burst
    return _one(
        conn, "select * from pgflight.set_recipe_limits(%s, %s)", [recipe, Jsonb(options)], m.RecipeLimits
    )


def set_global_limits(conn: Connection, *, max_in_flight: int | None) -> int | None:
    """
    Set (or with None remove) the cap on leased attempts across all workspaces.

    :return: the cap now in force.
    """
    value = _scalar(
        conn, "select * from pgflight.set_global_limits(%s)", [Jsonb({"max_in_flight": max_in_flight})]
    )
    return None if value is None else int(value)


def _toggle(conn: Connection, function: str, name: str, note: str | None) -> bool:
    return bool(_scalar(conn, f"select pgflight.{function}(%s, %s)", [name, note]))


def pause_workspace(conn: Connection, workspace: str, *, note: str | None = None) -> bool:
    """Pause a workspace's claims (leased work finishes); True when this call paused it."""
    return _toggle(conn, "pause_workspace", workspace, note)


def resume_workspace(conn: Connection, workspace: str, *, note: str | None = None) -> bool:
    """Resume a paused workspace; True when this call resumed it."""
    return _toggle(conn, "resume_workspace", workspace, note)


def pause_recipe(conn: Connection, recipe: str, *, note: str | None = None) -> bool:
    """Pause a recipe's claims in every workspace; True when this call paused it."""
    return _toggle(conn, "pause_recipe", recipe, note)


def resume_recipe(conn: Connection, recipe: str, *, note: str | None = None) -> bool:
    """Resume a paused recipe; True when this call resumed it."""
    return _toggle(conn, "resume_recipe", recipe, note)


def workspace_flow(conn: Connection, workspace: str | None = None) -> list[m.WorkspaceFlow]:
    """The workspace_flow view: limits, in-flight, queued and parked counts (one workspace or all)."""
    return _rows(
        conn,
        "select * from pgflight.workspace_flow where %s::text is null or workspace = %s order by workspace",
        [workspace, workspace],
        m.WorkspaceFlow,
    )


def schedule_run(
    conn: Connection,
    workspace: str,
    name: str,
    cron: str,
    recipe: str,
    input: Any = None,
    *,
    time_zone: str | None = None,
    overlap: str | None = None,
    run_options: Mapping[str, Any] | None = None,
) -> m.ScheduleCreated:
    """
    Create or replace (by workspace and name) a recurring run.

    :param cron: five fields, or six with seconds first; read on `time_zone`'s wall clock (UTC).
    :param overlap: skip (default), queue_one or allow: a firing while the previous run runs.
    :param run_options: submit_run options of each run (priority, max_attempts, ...).
    :return: the schedule id and its next firing.
    :raises BadArgument: bad expression, zone or option (22023).
    :raises NotFound: unknown workspace (ZF003).
    """
    options: dict[str, Any] = {}
    if time_zone is not None:
        options["time_zone"] = time_zone
    if overlap is not None:
        options["overlap"] = overlap
    if run_options is not None:
        options["run_options"] = dict(run_options)
    return _one(
        conn,
        "select * from pgflight.schedule_run(%s, %s, %s, %s, %s, %s)",
        [workspace, name, cron, recipe, Jsonb(input if input is not None else {}), Jsonb(options)],
        m.ScheduleCreated,
    )


def unschedule_run(conn: Connection, workspace: str, name: str) -> bool:
    """Remove a schedule; True when one was removed."""
    return bool(_scalar(conn, "select pgflight.unschedule_run(%s, %s)", [workspace, name]))


def schedule_list(conn: Connection, workspace: str | None = None) -> list[m.ScheduleItem]:
    """The schedule_list view (one workspace or all), by workspace and name."""
    return _rows(
        conn,
        "select * from pgflight.schedule_list where %s::text is null or workspace = %s"
        " order by workspace, name",
        [workspace, workspace],
        m.ScheduleItem,
    )


def fire_schedules(conn: Connection, *, limit: int = 100) -> int:
    """Sweep: fire due schedules (also part of run_sweeps); returns the firings decided."""
    return int(_scalar(conn, "select pgflight.fire_schedules(%s)", [limit]))


def wake_parked_keys(conn: Connection, *, limit: int = 1000) -> int:
    """Sweep: wake parked attempts of concurrency keys with free slots (also part of run_sweeps)."""
    return int(_scalar(conn, "select pgflight.wake_parked_keys(%s)", [limit]))
