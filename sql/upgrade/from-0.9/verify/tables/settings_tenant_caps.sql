-- Verify pgflight:tables/settings_tenant_caps
select max_lease_s_capped, max_schedules_per_workspace, min_schedule_interval_s, max_trace_blocks_per_iteration,
       workers_keep_s
  from pgflight.settings where false;
