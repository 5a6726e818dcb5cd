-- Deploy pgflight:internals/_require_lane_on_step

begin;

set local role pgflight_owner;

CREATE OR REPLACE FUNCTION pgflight._require_lane_on_step(p_lane text, p_step_id bigint, p_operation text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ws bigint;
begin
  select r.workspace_id into v_ws from pgflight.steps s join pgflight.runs r on r.id = s.run_id where s.id = p_step_id;
  if found and not pgflight._may(p_lane, v_ws) then
    if not pgflight._may('reader', v_ws) then
      raise exception using errcode = 'ZF003', message = format('unknown step %s', p_step_id);
    end if;
    perform pgflight._require_lane(p_lane, v_ws, p_operation);
  end if;
end
$$;

COMMENT ON FUNCTION pgflight._require_lane_on_step(p_lane text, p_step_id bigint, p_operation text) IS 'Internal: ZF012 unless the login has the lane on the step''s workspace (ZF003 unknown step when it sees nothing there); an unknown step passes.';

REVOKE ALL ON FUNCTION pgflight._require_lane_on_step(p_lane text, p_step_id bigint, p_operation text) FROM PUBLIC;

commit;
