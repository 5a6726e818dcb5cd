-- Deploy pgflight:views/dead_letters

begin;

set local role pgflight_owner;

CREATE OR REPLACE VIEW pgflight.dead_letters AS
 SELECT st.step_id,
    st.run_id,
    st.step_key,
    st.recipe,
    st.attempt_id,
    st.attempt_no,
    st.failed_attempts,
    st.reason,
    st.error,
    st.finished_at
   FROM pgflight.step_status st
  WHERE (st.status = 'dead_letter'::text);

COMMENT ON VIEW pgflight.dead_letters IS 'Dead-lettered steps with their last error.';

GRANT SELECT ON TABLE pgflight.dead_letters TO pgflight_reader;
GRANT SELECT ON TABLE pgflight.dead_letters TO pgflight_operator;

commit;
