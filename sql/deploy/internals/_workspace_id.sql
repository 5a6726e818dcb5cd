-- Deploy pgflight:internals/_workspace_id

begin;

set local role pgflight_owner;

-- The workspace id of a name, or ZF003 (internals/_trust's _unknown_workspace): for a name that
-- does not exist and for one on which the login has no grant at all, the same answer, so an
-- operator function never confirms another tenant's workspace name.
CREATE OR REPLACE FUNCTION pgflight._workspace_id(p_workspace text) RETURNS bigint
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_id bigint;
begin
  select w.id into v_id from pgflight.workspaces w where w.name = p_workspace;
  if v_id is null or not pgflight._may('reader', v_id) then
    perform pgflight._unknown_workspace(p_workspace);
  end if;
  return v_id;
end
$$;

COMMENT ON FUNCTION pgflight._workspace_id(p_workspace text) IS 'Internal: a workspace''s id by name; ZF003 when unknown or outside every lane of the login.';

REVOKE ALL ON FUNCTION pgflight._workspace_id(p_workspace text) FROM PUBLIC;

commit;
