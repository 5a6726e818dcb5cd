-- Deploy pgflight:views/attempts
-- Read-only views for operators and readers. They run with the owner's rights, so readers need
-- no table privileges.
begin;
set local role pgflight_owner;

create or replace view pgflight.attempts as
select a.id as attempt_id, a.step_id, a.run_id, a.attempt_no, a.recipe, a.status, a.worker_id,
       a.fencing_token, a.claimed_at, a.started_at, a.lease_expires_at, a.deadline_at, a.finished_at,
       a.available_after, a.reason, a.error, a.result
  from pgflight.step_attempts a;
comment on view pgflight.attempts is 'Every attempt, with its claim metadata (never cleared).';
grant select on pgflight.attempts to pgflight_reader, pgflight_operator;

commit;
