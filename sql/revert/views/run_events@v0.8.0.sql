-- Revert pgflight:views/run_events@v0.8.0: restores the previous definition, deploy/views/run_events@v0.5.0.sql (written by scripts/gen_sql_scripts.py)
-- Read-only views for operators and readers. They run with the owner's rights, so readers need
-- no table privileges.
begin;
set local role pgflight_owner;
drop view pgflight.run_events;

-- Issue 13: a security_barrier view showing only the reading login's workspaces. The workspace
-- list is an initplan, computed once per query; null (every workspace: a single-tenant install,
-- the owner, a superuser) skips the filter row by row.
-- Issue 18: the events rows, and the two transitions of the happy path that the attempt row
-- records without one (tables/step_attempts_event_ids): a started claim ('claimed', queued ->
-- running, at claimed_at) and a success from running ('succeeded', running -> succeeded, at
-- finished_at), each with the events id it took, so the log reads as before, in one id order.
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
    select d.id, d.at, s.run_id, s.id, a.id, d.from_status, d.to_status, a.worker_id,
           null::text, d.reason, null::jsonb
      from pgflight.steps s
      join pgflight.step_attempts a on a.step_id = s.id
     cross join lateral (values (a.claim_event_id, a.claimed_at, 'queued', 'running', 'claimed'),
                                (a.finish_event_id, a.finished_at, 'running', 'succeeded', 'succeeded'))
                  as d(id, at, from_status, to_status, reason)
     where d.id is not null
  ) l
 where (select pgflight._lane_workspaces('reader')) is null
    or exists (select from pgflight.runs r where r.id = l.run_id
                  and r.workspace_id = any (coalesce((select pgflight._lane_workspaces('reader')), '{}')));
comment on view pgflight.run_events is
  'The transition log: the events rows, and the started claims and successes the attempts record (issue 18).';
grant select on pgflight.run_events to pgflight_reader, pgflight_operator;

commit;
