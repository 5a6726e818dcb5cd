-- Deploy pgflight:tables/budgets
-- requires: tables/runs tables/steps
-- Spend budgets with atomic reservation (C24). One row per scope:
--   run            the whole run tree: runs.max_usd (USD), runs.max_wall_s (seconds since submit);
--   step           an agent and every descendant: the agent's own max_usd / max_wall_s;
--   workspace_day  a workspace on one UTC day: workspaces.daily_usd_cap.
-- Admission before a model call is one UPDATE ... SET reserved_usd = reserved_usd + est WHERE
-- spent_usd + reserved_usd + est <= limit_usd; the reservation is replaced by the actual cost in
-- the transaction that records the call. Overshoot: a call's actual cost may exceed its estimate,
-- so spent may pass the limit by at most (actual - estimate) of each call admitted concurrently.
begin;
set local role pgflight_owner;

create table pgflight.budgets (
  id            bigint generated always as identity primary key,
  scope         text not null,
  workspace_id  bigint not null references pgflight.workspaces (id) on delete cascade,
  run_id        bigint references pgflight.runs (id) on delete cascade,
  step_id       bigint references pgflight.steps (id) on delete cascade,
  day           date,
  limit_usd     numeric(16, 8),
  max_wall_s    double precision,
  started_at    timestamptz not null default pgflight._now(),
  spent_usd     numeric(16, 8) not null default 0,
  reserved_usd  numeric(16, 8) not null default 0,
  exceeded_at   timestamptz,
  constraint scope_is_known check (scope in ('run', 'step', 'workspace_day')),
  constraint scope_names_its_key check (case scope
    when 'run' then run_id is not null and step_id is null and day is null
    when 'step' then run_id is not null and step_id is not null and day is null
    else run_id is null and step_id is null and day is not null end),
  constraint amounts_are_not_negative check (spent_usd >= 0 and reserved_usd >= 0 and (limit_usd is null or limit_usd >= 0)),
  constraint max_wall_is_positive check (max_wall_s is null or max_wall_s > 0)
);
create unique index budgets_run_idx on pgflight.budgets (run_id) where scope = 'run';
create unique index budgets_step_idx on pgflight.budgets (step_id) where scope = 'step';
create unique index budgets_workspace_day_idx on pgflight.budgets (workspace_id, day) where scope = 'workspace_day';
-- enforce_budgets reads only trees not yet cancelled
create index budgets_open_trees_idx on pgflight.budgets (id) where scope <> 'workspace_day' and exceeded_at is null;
comment on table pgflight.budgets is
  'Spend budgets: scope run | step (an agent''s subtree) | workspace_day (UTC day). limit_usd (USD, '
  'null: no USD cap), max_wall_s (seconds from started_at, null: none), spent_usd and reserved_usd '
  '(USD). Invariant held by admission: spent + reserved <= limit, except the documented overshoot of '
  'calls whose actual cost exceeded their estimate. exceeded_at: when enforce_budgets cancelled the tree.';

commit;
