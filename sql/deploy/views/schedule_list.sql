-- Deploy pgflight:views/schedule_list
begin;
set local role pgflight_owner;

-- The recurring runs (issue 15): what `pgflight schedule list` prints.
-- Issue 13: security_barrier, only the reading login's workspaces (as views/run_list).
create or replace view pgflight.schedule_list with (security_barrier) as
select w.name as workspace, s.name, s.cron, s.time_zone, s.recipe, s.overlap, s.next_fire_at,
       s.last_fire_at, s.last_run_id, s.pending_fire_at, s.created_by, s.created_at
  from pgflight.schedules s join pgflight.workspaces w on w.id = s.workspace_id
 where (select pgflight._lane_workspaces('reader')) is null
    or s.workspace_id = any (coalesce((select pgflight._lane_workspaces('reader')), '{}'));
comment on view pgflight.schedule_list is 'Schedules with their next and last firing.';

grant select on pgflight.schedule_list to pgflight_reader, pgflight_operator;

commit;
