-- Revert pgflight:views/run_events@v0.3.0: restores the previous definition, deploy/views/run_events@v0.2.0.sql (written by scripts/gen_sql_scripts.py)
-- Read-only views for operators and readers. They run with the owner's rights, so readers need
-- no table privileges.
begin;
set local role pgflight_owner;

create or replace view pgflight.run_events as
select e.id, e.at, e.run_id, e.step_id, e.attempt_id, e.from_status, e.to_status, e.worker_id,
       e.actor, e.reason, e.detail
  from pgflight.events e;
comment on view pgflight.run_events is 'The transition log.';
grant select on pgflight.run_events to pgflight_reader, pgflight_operator;

commit;
