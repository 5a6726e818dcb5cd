-- Deploy pgflight:functions/set_tool_policy
begin;
set local role pgflight_owner;

-- Set the policy of one tool (or '*': every tool without its own policy) in a workspace
-- (docs/waiting.md#tool-policies); an upsert, so setting it twice is safe. p_policy:
--   action    'allow' | 'deny' | 'require_approval' (required);
--   when      a JSON path (PostgreSQL jsonpath) on the call's arguments: the action applies only
--             when it matches (jsonb_path_exists, silent); at most settings.max_name_bytes bytes;
--   over_usd  USD (0 .. 1e9): the action applies only once the agent run has spent this much.
-- When a condition does not hold the call is allowed. mark_tool_call reads the policy just before
-- each tool call starts, so a change applies to the next call. Returns the policy now in force.
-- Errors: 22023 a NULL or blank argument, an unknown key, a bad action, a path that does not parse,
-- an over_usd that is not a number in range; ZF003 unknown workspace; ZF005 a tool name or path
-- longer than settings.max_name_bytes; ZF012 not an operator of the workspace.
create or replace function pgflight.set_tool_policy(p_workspace text, p_tool text, p_policy jsonb)
returns table (workspace text, tool_name text, action text, condition text, over_usd numeric,
               updated_at timestamptz, updated_by text)
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_ws bigint;
  v_action text;
  v_cond jsonpath;
  v_usd numeric;
  v_max_name integer := (select s.max_name_bytes from pgflight.settings s);
begin
  if p_workspace is null or p_tool is null or btrim(p_tool) = '' or p_policy is null then
    raise exception using errcode = '22023',
      message = format('set_tool_policy refused: %s is required',
                       case when p_workspace is null then 'the workspace'
                            when p_policy is null then 'the policy' else 'the tool name' end),
      hint = 'Pass a workspace, a tool name (or ''*'') and a policy such as {"action": "require_approval"}.';
  end if;
  v_ws := pgflight._workspace_id(p_workspace);
  perform pgflight._require_lane('operator', v_ws, 'set_tool_policy');
  perform pgflight._require_cap('max_name_bytes', v_max_name, octet_length(p_tool), 'tool name (bytes)');
  perform pgflight._require_known_keys(p_policy, array['action', 'when', 'over_usd']);
  v_action := case when jsonb_typeof(p_policy -> 'action') = 'string' then p_policy ->> 'action' end;
  if v_action is null or v_action not in ('allow', 'deny', 'require_approval') then
    raise exception using errcode = '22023', message = 'set_tool_policy refused: action must be allow, deny or require_approval',
      detail = format('got %s', left(coalesce((p_policy -> 'action')::text, 'nothing'), 100)),
      hint = 'Pass {"action": "allow" | "deny" | "require_approval"}, optionally with "when" and "over_usd".';
  end if;
  if p_policy ? 'when' and jsonb_typeof(p_policy -> 'when') <> 'null' then
    if jsonb_typeof(p_policy -> 'when') <> 'string' then
      raise exception using errcode = '22023', message = 'set_tool_policy refused: when must be a JSON path as a string',
        detail = format('got a JSON %s', jsonb_typeof(p_policy -> 'when')),
        hint = 'For example {"action": "require_approval", "when": "$.amount ? (@ > 100)"}.';
    end if;
    perform pgflight._require_cap('max_name_bytes', v_max_name, octet_length(p_policy ->> 'when'), 'when path (bytes)');
    begin
      v_cond := (p_policy ->> 'when')::jsonpath;
    exception when others then
      raise exception using errcode = '22023', message = 'set_tool_policy refused: when is not a JSON path',
        detail = left(sqlerrm, 200),
        hint = 'Write a PostgreSQL jsonpath, for example "$.to ? (@ like_regex \"^prod\")".';
    end;
  end if;
  if p_policy ? 'over_usd' and jsonb_typeof(p_policy -> 'over_usd') <> 'null' then
    if jsonb_typeof(p_policy -> 'over_usd') <> 'number' or (p_policy ->> 'over_usd')::numeric not between 0 and 1e9 then
      raise exception using errcode = '22023', message = 'set_tool_policy refused: over_usd must be a number from 0 to 1e9',
        detail = format('got %s', left((p_policy -> 'over_usd')::text, 100)),
        hint = 'USD the agent run has spent before the action applies.';
    end if;
    v_usd := round((p_policy ->> 'over_usd')::numeric, 8);
  end if;
  insert into pgflight.tool_policies as t (workspace_id, tool_name, action, condition, over_usd, updated_at, updated_by)
  values (v_ws, p_tool, v_action, v_cond, v_usd, pgflight._now(), session_user)
  on conflict on constraint tool_policies_pkey do update
     set action = excluded.action, condition = excluded.condition, over_usd = excluded.over_usd,
         updated_at = excluded.updated_at, updated_by = excluded.updated_by;
  return query
    select p_workspace, t.tool_name, t.action, t.condition::text, t.over_usd, t.updated_at, t.updated_by
      from pgflight.tool_policies t where t.workspace_id = v_ws and t.tool_name = p_tool;
end
$$;
comment on function pgflight.set_tool_policy(text, text, jsonb) is
  'Set a workspace''s policy for a tool (or ''*''): {"action": allow|deny|require_approval, "when": jsonpath '
  'on the arguments, "over_usd": USD spent by the agent}; applied by mark_tool_call before the tool runs. '
  'Errors: 22023, ZF003, ZF005, ZF012.';
revoke execute on function pgflight.set_tool_policy(text, text, jsonb) from public;
grant execute on function pgflight.set_tool_policy(text, text, jsonb) to pgflight_operator;

commit;
