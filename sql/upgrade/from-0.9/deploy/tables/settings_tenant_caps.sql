-- Deploy pgflight:tables/settings_tenant_caps
-- requires: tables/settings_caps
-- Caps of what one tenant could otherwise hold or grow without bound (docs/security.md#caps):
-- how long one claim may hold a slot of an in-flight cap, how many schedules a workspace may have
-- and how often each may fire, how many trace blocks one agent iteration may write, and how long
-- a stopped worker's row is kept. Over a cap the API call raises ZF005 naming the column; the
-- lease ceiling clamps instead (a lease is a request, not a payload).
begin;
set local role pgflight_owner;

alter table pgflight.settings
  add column max_lease_s_capped              double precision not null default 900,
  add column max_schedules_per_workspace     integer not null default 100,
  add column min_schedule_interval_s         double precision not null default 60,
  add column max_trace_blocks_per_iteration  integer not null default 1000,
  add column workers_keep_s                  double precision not null default 604800,
  add constraint tenant_caps_are_positive check (
    max_lease_s_capped > 0 and max_schedules_per_workspace > 0 and min_schedule_interval_s > 0
    and max_trace_blocks_per_iteration > 0 and workers_keep_s > 0);

comment on column pgflight.settings.max_lease_s_capped is
  'Ceiling (seconds) of a lease counted against an in-flight cap (settings.max_in_flight or a workspace''s): '
  'a claim''s requested lease is clamped to it, so one claim cannot hold a capped slot longer.';
comment on column pgflight.settings.max_schedules_per_workspace is 'Cap of schedules of one workspace.';
comment on column pgflight.settings.min_schedule_interval_s is
  'Shortest gap (seconds) between two firings a schedule''s cron expression may allow.';
comment on column pgflight.settings.max_trace_blocks_per_iteration is
  'Cap of trace blocks of one agent run iteration (record_trace, record_model_call).';
comment on column pgflight.settings.workers_keep_s is
  'How long (seconds) a stopped worker''s row is kept before the retention sweep (maintain_partitions) deletes it.';

commit;
