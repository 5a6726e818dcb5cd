-- Deploy pgflight:functions/tool_policies

begin;

set local role pgflight_owner;

-- Read: the tool policies of a workspace, by tool name ('*' first). Any lane on the workspace
-- may read them (a worker's agent learns why a call was denied from the tool result anyway).
-- Errors: 22023 a NULL workspace; ZF003 unknown workspace; ZF012 no lane on the workspace.
CREATE OR REPLACE FUNCTION pgflight.tool_policies(p_workspace text) RETURNS TABLE(workspace text, tool_name text, action text, condition text, over_usd numeric, updated_at timestamp with time zone, updated_by text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ws bigint;
begin
  if p_workspace is null then
    raise exception using errcode = '22023', message = 'tool_policies refused: the workspace is required',
      hint = 'Pass a workspace name.';
  end if;
  v_ws := pgflight._workspace_id(p_workspace);
  perform pgflight._require_lane('reader', v_ws, 'tool_policies');
  return query
    select p_workspace, t.tool_name, t.action, t.condition::text, t.over_usd, t.updated_at, t.updated_by
      from pgflight.tool_policies t where t.workspace_id = v_ws
     order by t.tool_name;
end
$$;

COMMENT ON FUNCTION pgflight.tool_policies(p_workspace text) IS 'Read: a workspace''s tool policies (tool_name, action, condition, over_usd, updated_at, updated_by). Errors: 22023, ZF003, ZF012.';

REVOKE ALL ON FUNCTION pgflight.tool_policies(p_workspace text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.tool_policies(p_workspace text) TO pgflight_reader;
GRANT ALL ON FUNCTION pgflight.tool_policies(p_workspace text) TO pgflight_operator;

commit;
