-- Deploy pgflight:internals/_may

begin;

set local role pgflight_owner;

-- May the login act in p_lane on workspace p_workspace_id? p_workspace_id null asks for every
-- workspace (an every-workspace grant). Any grant on a workspace includes the reader lane there
-- (what a worker may read is further limited by the SQL grants: no view is granted to
-- pgflight_worker). One probe of
-- workspace_grants' unique index (login, lane, workspace_id), plus a syscache-backed role lookup.
CREATE OR REPLACE FUNCTION pgflight._may(p_lane text, p_workspace_id bigint) RETURNS boolean
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  -- PL/pgSQL rather than SQL (claim cost): a SQL function with a SET clause is never
  -- inlined and its query is planned on every call (measured 0.3 ms per claim_batch with
  -- _lane_workspaces); PL/pgSQL caches the plan for the session
  return exists (select from pgflight.workspace_grants g
                  where g.login = session_user
                    and (g.lane = p_lane or p_lane = 'reader')
                    and (g.workspace_id is null or g.workspace_id = p_workspace_id))
      or coalesce((select r.rolsuper from pg_catalog.pg_roles r where r.rolname = session_user), false);
end
$$;

COMMENT ON FUNCTION pgflight._may(p_lane text, p_workspace_id bigint) IS 'Internal: may the login (session_user) act in this lane on this workspace (null: on every one)?';

REVOKE ALL ON FUNCTION pgflight._may(p_lane text, p_workspace_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight._may(p_lane text, p_workspace_id bigint) TO pgflight_worker;
GRANT ALL ON FUNCTION pgflight._may(p_lane text, p_workspace_id bigint) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight._may(p_lane text, p_workspace_id bigint) TO pgflight_reader;

commit;
