-- Deploy pgflight:functions/tool_policies
begin;
set local role pgflight_owner;

-- Read: the tool policies of a workspace, by tool name ('*' first). Any lane on the workspace
-- may read them (a worker's agent learns why a call was denied from the tool result anyway).
-- Errors: 22023 a NULL workspace; ZF003 unknown workspace; ZF012 no lane on the workspace.
create or replace function pgflight.tool_policies(p_workspace text)
returns table (workspace text, tool_name text, action text, condition text, over_usd numeric,
               updated_at timestamptz, updated_by text)
language plpgsql stable security definer
set search_path = pg_catalog, pg_temp
as $$
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
comment on function pgflight.tool_policies(text) is
  'Read: a workspace''s tool policies (tool_name, action, condition, over_usd, updated_at, updated_by). '
  'Errors: 22023, ZF003, ZF012.';
revoke execute on function pgflight.tool_policies(text) from public;
grant execute on function pgflight.tool_policies(text) to pgflight_reader, pgflight_operator;

commit;
