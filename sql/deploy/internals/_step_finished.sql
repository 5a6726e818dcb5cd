-- Deploy pgflight:internals/_step_finished

begin;

set local role pgflight_owner;

-- One step's end (the row-by-row paths: fail, reclaim, deadline, release of a cancel, cancel_step).
CREATE OR REPLACE FUNCTION pgflight._step_finished(p_step_id bigint, p_final text, p_actor text DEFAULT NULL::text) RETURNS void
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select pgflight._steps_finished(array[p_step_id], array[p_final], p_actor, pgflight._now()) $$;

COMMENT ON FUNCTION pgflight._step_finished(p_step_id bigint, p_final text, p_actor text) IS 'Internal: _steps_finished for one step ending now.';

REVOKE ALL ON FUNCTION pgflight._step_finished(p_step_id bigint, p_final text, p_actor text) FROM PUBLIC;

commit;
