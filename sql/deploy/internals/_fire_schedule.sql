-- Deploy pgflight:internals/_fire_schedule
-- Defines: _fire_schedule().
begin;
set local role pgflight_owner;

-- Submit the run of one firing (idempotency key schedule:<id>:<fire time in epoch seconds>) and
-- mark the firing submitted; a refusal is caught and recorded as failed. Returns the run or null.
create or replace function pgflight._fire_schedule(
  p_schedule_id bigint, p_workspace text, p_name text, p_recipe text, p_input jsonb, p_run_options jsonb,
  p_fire_at timestamptz)
returns bigint
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
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
comment on function pgflight._fire_schedule(bigint, text, text, text, jsonb, jsonb, timestamptz) is
  'Internal: submit one firing''s run idempotently; a refusal is recorded on the firing, never raised.';

commit;
