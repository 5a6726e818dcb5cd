-- Deploy pgflight:functions/revoke_workspace

begin;

set local role pgflight_owner;

-- Take back a grant_workspace grant: the login's lane on that workspace (null: the every-workspace
-- grant; a specific workspace's grant is separate). Returns whether a grant was removed. Attempts
-- the login's workers already hold finish; its next claim_batch takes nothing from the workspace.
-- Owner only, like grant_workspace. Errors: ZF003 unknown workspace.
CREATE OR REPLACE FUNCTION pgflight.revoke_workspace(p_login name, p_workspace text, p_lane text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ws bigint;
  v_removed integer;
begin
  if p_workspace is not null then
    select w.id into v_ws from pgflight.workspaces w where w.name = p_workspace;
    if not found then
      raise exception using errcode = 'ZF003', message = format('unknown workspace %L', p_workspace);
    end if;
  end if;
  delete from pgflight.workspace_grants g
   where g.login = p_login and g.lane = p_lane and g.workspace_id is not distinct from v_ws;
  get diagnostics v_removed = row_count;
  return v_removed > 0;
end
$$;

COMMENT ON FUNCTION pgflight.revoke_workspace(p_login name, p_workspace text, p_lane text) IS 'Owner only: remove a login''s lane on a workspace (null: its every-workspace grant). True when removed. Errors: ZF003.';

REVOKE ALL ON FUNCTION pgflight.revoke_workspace(p_login name, p_workspace text, p_lane text) FROM PUBLIC;

commit;
