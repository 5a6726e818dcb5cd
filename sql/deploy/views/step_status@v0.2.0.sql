-- Deploy pgflight:views/step_status
-- Read-only views for operators and readers. They run with the owner's rights, so readers need
-- no table privileges.
begin;
set local role pgflight_owner;

create or replace view pgflight.step_status as
select s.id as step_id, s.run_id, s.parent_id, s.depth, s.step_key, s.recipe,
       a.id as attempt_id, a.attempt_no, a.status, s.failed_attempts, s.max_attempts,
       a.worker_id, a.claimed_at, a.started_at, a.finished_at, a.lease_expires_at, a.deadline_at,
       a.result, a.error, a.reason, s.children_pending, s.created_at
  from pgflight.steps s
  join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no;
comment on view pgflight.step_status is 'Each step with the status of its latest attempt (the step''s current state).';
grant select on pgflight.step_status to pgflight_reader, pgflight_operator;

commit;
