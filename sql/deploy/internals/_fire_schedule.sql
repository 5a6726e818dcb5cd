-- Deploy pgflight:internals/_fire_schedule

begin;

set local role pgflight_owner;

-- Submit the run of one firing (idempotency key schedule:<id>:<fire time in epoch seconds>) and
-- mark the firing submitted; a refusal is caught and recorded as failed. Returns the run or null.
CREATE OR REPLACE FUNCTION pgflight._fire_schedule(p_schedule_id bigint, p_workspace text, p_name text, p_recipe text, p_input jsonb, p_run_options jsonb, p_fire_at timestamp with time zone) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_run bigint;
begin
  begin
    select r.run_id into v_run
      from pgflight.submit_run(p_workspace, p_recipe, p_input,
             p_run_options || jsonb_build_object(
               'idempotency_key', format('schedule:%s:%s', p_schedule_id, extract(epoch from p_fire_at)),
               'submitted_by', 'schedule:' || p_name)) r;
    update pgflight.schedule_fires f set outcome = 'submitted', run_id = v_run
     where f.schedule_id = p_schedule_id and f.fire_at = p_fire_at;
  exception when others then
    update pgflight.schedule_fires f
       set outcome = 'failed', error = jsonb_build_object('sqlstate', sqlstate, 'message', sqlerrm)
     where f.schedule_id = p_schedule_id and f.fire_at = p_fire_at;
  end;
  return v_run;
end
$$;

COMMENT ON FUNCTION pgflight._fire_schedule(p_schedule_id bigint, p_workspace text, p_name text, p_recipe text, p_input jsonb, p_run_options jsonb, p_fire_at timestamp with time zone) IS 'Internal: submit one firing''s run idempotently; a refusal is recorded on the firing, never raised.';

REVOKE ALL ON FUNCTION pgflight._fire_schedule(p_schedule_id bigint, p_workspace text, p_name text, p_recipe text, p_input jsonb, p_run_options jsonb, p_fire_at timestamp with time zone) FROM PUBLIC;

commit;
