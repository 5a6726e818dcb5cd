-- Deploy pgflight:functions/unschedule_run

begin;

set local role pgflight_owner;

-- Remove a schedule (and its firing log). Runs it already submitted go on. Returns true when a
-- schedule was removed. Errors: ZF003 unknown workspace.
CREATE OR REPLACE FUNCTION pgflight.unschedule_run(p_workspace text, p_name text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform pgflight._require_lane('operator', pgflight._workspace_id(p_workspace), 'unschedule_run');  -- tenants
  delete from pgflight.schedules s where s.workspace_id = pgflight._workspace_id(p_workspace) and s.name = p_name;
  return found;
end
$$;

COMMENT ON FUNCTION pgflight.unschedule_run(p_workspace text, p_name text) IS 'Remove a schedule by workspace and name; true when removed. Errors: ZF003.';

REVOKE ALL ON FUNCTION pgflight.unschedule_run(p_workspace text, p_name text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.unschedule_run(p_workspace text, p_name text) TO pgflight_operator;

commit;
