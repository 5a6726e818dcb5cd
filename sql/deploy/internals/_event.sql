-- Deploy pgflight:internals/_event

begin;

set local role pgflight_owner;

-- Append one row to the transition log. Called in the same transaction as the change.
CREATE OR REPLACE FUNCTION pgflight._event(p_run_id bigint, p_step_id bigint, p_attempt_id bigint, p_from text, p_to text, p_worker_id bigint, p_reason text, p_actor text DEFAULT NULL::text, p_detail jsonb DEFAULT NULL::jsonb) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  -- PL/pgSQL rather than SQL: its INSERT plan is cached across calls, a SQL function's is not
  insert into pgflight.events (at, run_id, step_id, attempt_id, from_status, to_status, worker_id, reason, actor, detail)
  values (pgflight._now(), p_run_id, p_step_id, p_attempt_id, p_from, p_to, p_worker_id, p_reason, p_actor, p_detail);
end
$$;

COMMENT ON FUNCTION pgflight._event(p_run_id bigint, p_step_id bigint, p_attempt_id bigint, p_from text, p_to text, p_worker_id bigint, p_reason text, p_actor text, p_detail jsonb) IS 'Internal: append one events row.';

REVOKE ALL ON FUNCTION pgflight._event(p_run_id bigint, p_step_id bigint, p_attempt_id bigint, p_from text, p_to text, p_worker_id bigint, p_reason text, p_actor text, p_detail jsonb) FROM PUBLIC;

commit;
