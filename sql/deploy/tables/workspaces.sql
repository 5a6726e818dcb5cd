-- Deploy pgflight:tables/workspaces
-- requires: schema
-- A tenant: who pays, the daily spend cap, the in-flight caps.
begin;
set local role pgflight_owner;

create table pgflight.workspaces (
  id             bigint generated always as identity primary key,
  name           text not null,
  daily_usd_cap  numeric(14, 6),
  max_run_usd    numeric(14, 6),
  options        jsonb not null default '{}',
  created_at     timestamptz not null default pgflight._now(),
  constraint workspaces_name_is_unique unique (name),
  constraint name_is_not_blank check (btrim(name) <> '' and length(name) <= 200),
  constraint daily_usd_cap_is_not_negative check (daily_usd_cap is null or daily_usd_cap >= 0),
  constraint max_run_usd_is_not_negative check (max_run_usd is null or max_run_usd >= 0)
);
comment on table pgflight.workspaces is
  'Tenants. daily_usd_cap: USD a workspace may spend per UTC day on model calls (null: no cap); '
  'max_run_usd: default USD cap of each run tree (null: none); options: further per-workspace defaults.';

commit;
