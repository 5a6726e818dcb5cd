-- Deploy pgflight:views/run_events
-- Read-only views for operators and readers. They run with the owner's rights, so readers need
-- no table privileges.
begin;
set local role pgflight_owner;

-- Issue 13: a security_barrier view showing only the reading login's workspaces. The workspace
-- list is an initplan, computed once per query; null (every workspace: a single-tenant install,
-- the owner, a superuser) skips the filter row by row.
-- Issue 18: the events rows, and the two transitions of the happy path that the attempt row
-- records without one (tables/step_attempts_event_ids): a started claim ('claimed', queued ->
-- running, at claimed_at) and a success from running ('succeeded', running -> succeeded, at
-- finished_at), each with the events id it took, so the log reads as before, in one id order.
-- Issue 18, later: a submitted run's first queued too (queue_event_id, at created_at, actor the
-- run's submitted_by; tables/step_attempts_queue_event).
-- Issue 18, reclaim drain: a reclaim's retry's queued too (the same queue_event_id, on the new
-- attempt, with the backoff in queue_delay_s: reason retry_scheduled, actor reclaim, detail
-- delay_s and attempt_no as _reclaim_picked wrote them; tables/step_attempts_retry_queue_event).
-- The derived rows take run_id and step_id from steps, so a read of one run or step goes through
-- steps_run_idx (or the primary key) and the attempts of those steps, never the whole table.
create or replace view pgflight.run_events with (security_barrier) as
select l.id, l.at, l.run_id, l.step_id, l.attempt_id, l.from_status, l.to_status, l.worker_id,
       l.actor, l.reason, l.detail
  from (
    select e.id, e.at, e.run_id, e.step_id, e.attempt_id, e.from_status, e.to_status, e.worker_id,
           e.actor, e.reason, e.detail
      from pgflight.events e
    union all
    select d.id, d.at, s.run_id, s.id, a.id, d.from_status, d.to_status,
           case when d.to_status <> 'queued' then a.worker_id end,
           case d.reason when 'queued' then (select r.submitted_by from pgflight.runs r where r.id = s.run_id)
                         when 'retry_scheduled' then 'reclaim' end,
           d.reason,
           case when d.reason = 'retry_scheduled'
                then jsonb_build_object('delay_s', round(a.queue_delay_s::numeric, 3), 'attempt_no', a.attempt_no) end
      from pgflight.steps s
      join pgflight.step_attempts a on a.step_id = s.id
     cross join lateral (values (a.queue_event_id, a.created_at, null, 'queued',
                                 case when a.queue_delay_s is null then 'queued' else 'retry_scheduled' end),
                                (a.claim_event_id, a.claimed_at, 'queued', 'running', 'claimed'),
                                (a.finish_event_id, a.finished_at, 'running', 'succeeded', 'succeeded'))
                  as d(id, at, from_status, to_status, reason)
     where d.id is not null
  ) l
 where (select pgflight._lane_workspaces('reader')) is null
    or exists (select from pgflight.runs r where r.id = l.run_id
                  and r.workspace_id = any (coalesce((select pgflight._lane_workspaces('reader')), '{}')));
comment on view pgflight.run_events is
  'The transition log: the events rows, and the submits, reclaim retries, started claims and successes the attempts '
  'record (issue 18).';
grant select on pgflight.run_events to pgflight_reader, pgflight_operator;

commit;
