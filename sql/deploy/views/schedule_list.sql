-- Deploy pgflight:views/schedule_list
begin;
set local role pgflight_owner;

-- The recurring runs (issue 15): what `pgflight schedule list` prints.
create or replace view pgflight.schedule_list as
select w.name as workspace, s.name, s.cron, s.time_zone, s.recipe, s.overlap, s.next_fire_at,
       s.last_fire_at, s.last_run_id, s.pending_fire_at, s.created_by, s.created_at
  from pgflight.schedules s join pgflight.workspaces w on w.id = s.workspace_id;
comment on view pgflight.schedule_list is 'Schedules with their next and last firing.';

grant select on pgflight.schedule_list to pgflight_reader, pgflight_operator;

commit;
