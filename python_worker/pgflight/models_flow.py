"""
Pydantic models of the flow-control API: workspace and recipe limits, pauses, the
workspace_flow view and recurring runs.
"""

from __future__ import annotations

from datetime import datetime

from pgflight.models import Row


class WorkspaceLimits(Row):
    """set_workspace_limits: the limits now in force (None: no limit)."""

    workspace: str
    max_in_flight: int | None
    share: int
    starts_per_s: float | None
    burst: float | None
    model_tokens_per_min: int | None
    paused_at: datetime | None
    paused_by: str | None


class RecipeLimits(Row):
    """set_recipe_limits: a recipe's claim rate and pause (None: none)."""

    recipe: str
    starts_per_s: float | None
    burst: float | None
    paused_at: datetime | None
    paused_by: str | None


class WorkspaceFlow(Row):
    """view workspace_flow: a workspace's limits with its leased, queued and parked attempts."""

    workspace: str
    max_in_flight: int | None
    share: int
    starts_per_s: float | None
    burst: float | None
    model_tokens_per_min: int | None
    paused_at: datetime | None
    paused_by: str | None
    in_flight: int
    queued: int
    parked: int


class ScheduleCreated(Row):
    """schedule_run: the schedule and its next firing."""

    schedule_id: int
    next_fire_at: datetime


class ScheduleItem(Row):
    """view schedule_list: a recurring run."""

    workspace: str
    name: str
    cron: str
    time_zone: str
    recipe: str
    overlap: str
    next_fire_at: datetime | None
    last_fire_at: datetime | None
    last_run_id: int | None
    pending_fire_at: datetime | None
    created_by: str
    created_at: datetime
