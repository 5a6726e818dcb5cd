-- Deploy pgflight:functions/drop_tool_policy

begin;

set local role pgflight_owner;

-- Remove the policy of one tool (or '*') in a workspace: its calls fall back to the '*' policy,
-- or are allowed. Returns whether a policy was removed (false: there was none).
-- Errors: 22023 a NULL argument; ZF003 unknown workspace; ZF012 not an operator of the workspace.
CREATE OR REPLACE FUNCTION pgflight.drop_tool_policy(p_workspace text, p_tool text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ws bigint;
begin
  if p_workspace is null or p_tool is null then
    raise exception using errcode = '22023',
      message = format('drop_tool_policy refused: %s is required', case when p_workspace is null then 'the workspace' else 'the tool name' end),
      hint = 'Pass a workspace and a tool name (or ''*'').';
  end if;
  v_ws := pgflight._workspace_id(p_workspace);
  perform pgflight._require_lane('operator', v_ws, 'drop_tool_policy');
  delete from pgflight.tool_policies t where t.workspace_id = v_ws and t.tool_name = p_tool;
  return found;
end
$$;

COMMENT ON FUNCTION pgflight.drop_tool_policy(p_workspace text, p_tool text) IS 'Remove a workspace''s policy for a tool (or ''*''); true when one was removed. Errors: 22023, ZF003, ZF012.';

REVOKE ALL ON FUNCTION pgflight.drop_tool_policy(p_workspace text, p_tool text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.drop_tool_policy(p_workspace text, p_tool text) TO pgflight_operator;

commit;
