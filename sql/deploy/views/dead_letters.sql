-- Deploy pgflight:views/dead_letters
-- Read-only views for operators and readers. They run with the owner's rights, so readers need
-- no table privileges.
begin;
set local role pgflight_owner;

create or replace view pgflight.dead_letters as
select st.step_id, st.run_id, st.step_key, st.recipe, st.attempt_id, st.attempt_no, st.failed_attempts,
       st.reason, st.error, st.finished_at
  from pgflight.step_status st
 where st.status = 'dead_letter';
comment on view pgflight.dead_letters is 'Dead-lettered steps with their last error.';
grant select on pgflight.dead_letters to pgflight_reader, pgflight_operator;

commit;
