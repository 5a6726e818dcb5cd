-- Deploy pgflight:views/step_status
-- requires: functions/sweeps
-- Read-only views for operators and readers. They run with the owner's rights, so readers need
-- no table privileges.
begin;
set local role pgflight_owner;

create view pgflight.step_status as
select s.id as step_id, s.run_id, s.parent_id, s.depth, s.step_key, s.recipe,
       a.id as attempt_id, a.attempt_no, a.status, s.failed_attempts, s.max_attempts,
       a.worker_id, a.claimed_at, a.started_at, a.finished_at, a.lease_expires_at, a.deadline_at,
       a.result, a.error, a.reason, s.children_pending, s.created_at
  from pgflight.steps s
  join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no;
comment on view pgflight.step_status is 'Each step with the status of its latest attempt (the step''s current state).';

create view pgflight.attempts as
select a.id as attempt_id, a.step_id, a.run_id, a.attempt_no, a.recipe, a.status, a.worker_id,
       a.fencing_token, a.claimed_at, a.started_at, a.lease_expires_at, a.deadline_at, a.finished_at,
       a.available_after, a.reason, a.error, a.result
  from pgflight.step_attempts a;
comment on view pgflight.attempts is 'Every attempt, with its claim metadata (never cleared).';

create view pgflight.dead_letters as
select st.step_id, st.run_id, st.step_key, st.recipe, st.attempt_id, st.attempt_no, st.failed_attempts,
       st.reason, st.error, st.finished_at
  from pgflight.step_status st
 where st.status = 'dead_letter';
comment on view pgflight.dead_letters is 'Dead-lettered steps with their last error.';

create view pgflight.run_events as
select e.id, e.at, e.run_id, e.step_id, e.attempt_id, e.from_status, e.to_status, e.worker_id,
       e.actor, e.reason, e.detail
  from pgflight.events e;
comment on view pgflight.run_events is 'The transition log.';

create view pgflight.engine_health as
select (select count(*) from pgflight.step_attempts a where a.status = 'queued' and a.available_after <= (select pgflight._now())) as ready,
       (select count(*) from pgflight.step_attempts a where a.status in ('claimed', 'running', 'cancel_requested')) as leased,
       (select count(*) from pgflight.step_attempts a where a.status in ('claimed', 'running', 'cancel_requested')
           and a.lease_expires_at < (select pgflight._now())) as expired_not_reclaimed,
       (select count(*) from pgflight.step_attempts a where a.status in ('claimed', 'running')
           and a.deadline_at < (select pgflight._now()) and a.lease_expires_at >= (select pgflight._now())) as over_deadline_heartbeating,
       (select count(*) from pgflight.step_attempts a where a.status in ('awaiting_children', 'awaiting_approval')) as parked,
       (select count(*) from pgflight.workers w where w.stopped_at is null
           and w.last_seen_at > (select pgflight._now()) - interval '60 seconds') as workers_alive;
comment on view pgflight.engine_health is
  'Gauges: ready, leased, expired leases not yet reclaimed, attempts over their deadline but still heartbeating (C15), parked, workers seen in the last 60 s.';

create view pgflight.run_list as
select r.id as run_id, w.name as workspace, r.recipe, r.status, r.idempotency_key, r.submitted_by,
       r.created_at, r.finished_at
  from pgflight.runs r join pgflight.workspaces w on w.id = r.workspace_id;
comment on view pgflight.run_list is 'Runs with their workspace name.';

grant select on pgflight.step_status, pgflight.attempts, pgflight.dead_letters, pgflight.run_events,
                pgflight.engine_health, pgflight.run_list
   to pgflight_reader, pgflight_operator;

commit;
