-- Deploy pgflight:internals/_lane_workspaces

begin;

set local role pgflight_owner;

-- The workspaces the login may act on in p_lane: null when every workspace (the single-tenant
-- case, so callers skip the filter), else the granted ids (possibly none).
CREATE OR REPLACE FUNCTION pgflight._lane_workspaces(p_lane text) RETURNS bigint[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  -- PL/pgSQL for its cached plan, as _may
  return case when pgflight._may(p_lane, null) then null
              else coalesce((select array_agg(distinct g.workspace_id) from pgflight.workspace_grants g
                              where g.login = session_user and g.workspace_id is not null
                                and (g.lane = p_lane or p_lane = 'reader')),
                            '{}') end;
end
$$;

COMMENT ON FUNCTION pgflight._lane_workspaces(p_lane text) IS 'Internal: ids of the workspaces the login may act on in this lane; null for every workspace.';

REVOKE ALL ON FUNCTION pgflight._lane_workspaces(p_lane text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight._lane_workspaces(p_lane text) TO pgflight_worker;
GRANT ALL ON FUNCTION pgflight._lane_workspaces(p_lane text) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight._lane_workspaces(p_lane text) TO pgflight_reader;

commit;
