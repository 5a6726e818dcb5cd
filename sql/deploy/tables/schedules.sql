-- Deploy pgflight:tables/schedules
-- Recurring runs (issue 15): a cron expression, a recipe, an input and an overlap policy, fired by
-- the engine's own sweep (fire_schedules, part of run_sweeps). The expression is parsed when the
-- schedule is written; its allowed values are stored here so the sweep never parses.
begin;
set local role pgflight_owner;

create table pgflight.schedules (
  id               bigint generated always as identity primary key,
  workspace_id     bigint not null references pgflight.workspaces (id) on delete cascade,
  name             text not null,
  cron             text not null,
  time_zone        text not null default 'UTC',
  recipe           text not null,
  input            jsonb not null default '{}',
  run_options      jsonb not null default '{}',
  overlap          text not null default 'skip',
  seconds          integer[] not null,
  minutes          integer[] not null,
  hours            integer[] not null,
  days             integer[] not null,
  months           integer[] not null,
  weekdays         integer[] not null,
  any_day          boolean not null,
  any_weekday      boolean not null,
  next_fire_at     timestamptz,
  pending_fire_at  timestamptz,
  last_fire_at     timestamptz,
  last_run_id      bigint,
  created_by       text not null,
  created_at       timestamptz not null default pgflight._now(),
  updated_at       timestamptz not null default pgflight._now(),
  constraint schedule_name_is_unique_per_workspace unique (workspace_id, name),
  constraint name_is_not_blank check (btrim(name) <> '' and length(name) <= 200),
  constraint recipe_is_not_blank check (btrim(recipe) <> '' and length(recipe) <= 200),
  constraint overlap_is_known check (overlap in ('skip', 'queue_one', 'allow'))
);
-- the sweep reads due schedules by next firing, and held-back firings of queue_one
create index schedules_due_idx on pgflight.schedules (next_fire_at) where next_fire_at is not null;
create index schedules_pending_idx on pgflight.schedules (pending_fire_at) where pending_fire_at is not null;
comment on table pgflight.schedules is
  'Recurring runs. cron (5 or 6 fields, seconds first) read on the wall clock of time_zone; overlap: '
  'skip (a firing while the previous run is still running is skipped), queue_one (it waits, at most '
  'one, and runs when the previous run ends), allow (runs at once). seconds..weekdays, any_day, '
  'any_weekday: the parsed expression. next_fire_at: the next firing; pending_fire_at: a queue_one '
  'firing waiting for last_run_id to end.';

create table pgflight.schedule_fires (
  schedule_id   bigint not null references pgflight.schedules (id) on delete cascade,
  fire_at       timestamptz not null,
  fired_at      timestamptz not null,
  outcome       text not null,
  run_id        bigint,
  missed_until  timestamptz,
  error         jsonb,
  constraint schedule_fires_pkey primary key (schedule_id, fire_at),
  constraint outcome_is_known check (outcome in ('submitted', 'skipped', 'queued', 'failed'))
);
comment on table pgflight.schedule_fires is
  'One row per firing of a schedule, keyed by (schedule, fire time): a firing is decided once. '
  'outcome: submitted (run_id), skipped (overlap skip), queued (overlap queue_one: submitted later, '
  'when the previous run ends; the row is then updated to submitted), failed (submit_run refused: '
  'error says why; the schedule goes on). missed_until: the firing '
  'stands for every firing missed up to this instant (catch-up after downtime).';

commit;
