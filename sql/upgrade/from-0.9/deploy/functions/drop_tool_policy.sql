-- Deploy pgflight:functions/drop_tool_policy
begin;
set local role pgflight_owner;

-- Remove the policy of one tool (or '*') in a workspace: its calls fall back to the '*' policy,
-- or are allowed. Returns whether a policy was removed (false: there was none).
-- Errors: 22023 a NULL argument; ZF003 unknown workspace; ZF012 not an operator of the workspace.
create or replace function pgflight.drop_tool_policy(p_workspace text, p_tool text)
returns boolean
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
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
comment on function pgflight.drop_tool_policy(text, text) is
  'Remove a workspace''s policy for a tool (or ''*''); true when one was removed. Errors: 22023, ZF003, ZF012.';
revoke execute on function pgflight.drop_tool_policy(text, text) from public;
grant execute on function pgflight.drop_tool_policy(text, text) to pgflight_operator;

commit;
