-- Revert pgflight:tables/settings_tenant_caps
begin;
set local role pgflight_owner;

alter table pgflight.settings
  drop constraint tenant_caps_are_positive,
  drop column max_lease_s_capped,
  drop column max_schedules_per_workspace,
  drop column min_schedule_interval_s,
  drop column max_trace_blocks_per_iteration,
  drop column workers_keep_s;

commit;
