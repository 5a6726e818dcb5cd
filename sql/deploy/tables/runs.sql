-- Deploy pgflight:tables/runs
-- requires: tables/workspaces
-- A top-level job: what was asked, by whom, overall status, idempotency key, tree budgets.
begin;
set local role pgflight_owner;

create table pgflight.runs (
  id               bigint generated always as identity primary key,
  workspace_id     bigint not null references pgflight.workspaces (id),
  recipe           text not null,
  status           text not null default 'running',
  idempotency_key  text,
  input_hash       text not null,
  root_step_id     bigint,
  submitted_by     text,
  options          jsonb not null default '{}',
  max_usd          numeric(14, 6),
  max_wall_s       double precision,
  max_iterations   integer,
  max_tool_calls   integer,
  created_at       timestamptz not null default pgflight._now(),
  finished_at      timestamptz,
  constraint status_is_known check (status in ('running', 'succeeded', 'failed', 'cancelled')),
  constraint finished_at_is_set_when_terminal check ((status = 'running') = (finished_at is null)),
  constraint idempotency_key_is_unique_per_workspace unique (workspace_id, idempotency_key)
);
-- Retention finds old runs by created_at, a column never updated: an index on status or
-- finished_at would make the run's final UPDATE non-HOT on the completion hot path.
create index runs_created_idx on pgflight.runs (created_at);
comment on table pgflight.runs is
  'Top-level jobs. status: running | succeeded | failed (root step dead-lettered) | cancelled. '
  'input_hash: sha256 of the input JSON, to tell a repeated idempotency key from a conflicting one. '
  'max_usd (USD), max_wall_s (seconds), max_iterations, max_tool_calls: budgets of the whole tree.';

commit;
