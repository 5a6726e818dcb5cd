-- Deploy pgflight:views/flow_views
-- requires: tables/flow_limits tables/schedules tables/step_attempts_flow
-- What an operator reads about flow control (issue 15): each workspace's limits with its leased
-- and queued counts, and the schedules.
begin;
set local role pgflight_owner;

create or replace view pgflight.workspace_flow as
select w.name as workspace, l.max_in_flight, coalesce(l.share, 1) as share, l.starts_per_s, l.burst,
       l.model_tokens_per_min, l.paused_at, l.paused_by,
       (select count(*) from pgflight.step_attempts a
         where a.workspace_id = w.id and a.status in ('claimed', 'running', 'cancel_requested')) as in_flight,
       (select count(*) from pgflight.step_attempts a where a.workspace_id = w.id and a.status = 'queued') as queued,
       (select count(*) from pgflight.step_attempts a
         where a.workspace_id = w.id and a.status = 'queued' and a.available_after = 'infinity') as parked
  from pgflight.workspaces w
  left join pgflight.workspace_limits l on l.workspace_id = w.id;
comment on view pgflight.workspace_flow is
  'Per workspace: max_in_flight, share, starts_per_s/burst, model_tokens_per_min, pause; in_flight '
  '(leased attempts), queued, parked (queued behind a full concurrency key).';

create or replace view pgflight.schedule_list as
select w.name as workspace, s.name, s.cron, s.time_zone, s.recipe, s.overlap, s.next_fire_at,
       s.last_fire_at, s.last_run_id, s.pending_fire_at, s.created_by, s.created_at
  from pgflight.schedules s join pgflight.workspaces w on w.id = s.workspace_id;
comment on view pgflight.schedule_list is 'Schedules with their next and last firing.';

grant select on pgflight.workspace_flow, pgflight.schedule_list to pgflight_reader, pgflight_operator;

commit;
