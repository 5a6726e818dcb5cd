-- Deploy pgflight:internals/_require_lane_on_run

begin;

set local role pgflight_owner;

-- _require_lane on the workspace of run p_run_id / of step p_step_id. An unknown id passes (the
-- caller raises its own ZF003 for it). An id in a workspace the login has no lane on at all (not
-- even reader) answers exactly as the caller's unknown id: ZF003 'unknown run <id>' / 'unknown step
-- <id>', no DETAIL, no HINT, so a login cannot learn that another tenant's id exists. ZF012 only
-- where the login already sees the workspace (it reads there, and lacks this lane).
CREATE OR REPLACE FUNCTION pgflight._require_lane_on_run(p_lane text, p_run_id bigint, p_operation text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ws bigint;
begin
  select r.workspace_id into v_ws from pgflight.runs r where r.id = p_run_id;
  if found and not pgflight._may(p_lane, v_ws) then
    if not pgflight._may('reader', v_ws) then
      raise exception using errcode = 'ZF003', message = format('unknown run %s', p_run_id);
    end if;
    perform pgflight._require_lane(p_lane, v_ws, p_operation);
  end if;
end
$$;

COMMENT ON FUNCTION pgflight._require_lane_on_run(p_lane text, p_run_id bigint, p_operation text) IS 'Internal: ZF012 unless the login has the lane on the run''s workspace (ZF003 unknown run when it sees nothing there); an unknown run passes.';

REVOKE ALL ON FUNCTION pgflight._require_lane_on_run(p_lane text, p_run_id bigint, p_operation text) FROM PUBLIC;

commit;
