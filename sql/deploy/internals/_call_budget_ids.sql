-- Deploy pgflight:internals/_call_budget_ids

begin;

set local role pgflight_owner;

-- The budgets a model call of this agent is charged to: its tree budgets (run, capped ancestors,
-- itself) and, when the workspace has a daily cap, today's (UTC) workspace_day row, created on
-- first use and kept at the workspace's current cap. In no particular order (admission locks them
-- in id order). The common case (the day's row exists at the current cap) is one query.
CREATE OR REPLACE FUNCTION pgflight._call_budget_ids(p_run pgflight.agent_runs, p_now timestamp with time zone) RETURNS bigint[]
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_day date := (p_now at time zone 'UTC')::date;
  v_cap numeric;
  v_id bigint;
  v_limit numeric;
begin
  select w.daily_usd_cap, b.id, b.limit_usd into v_cap, v_id, v_limit
    from pgflight.workspaces w
    left join pgflight.budgets b on b.scope = 'workspace_day' and b.workspace_id = w.id and b.day = v_day
   where w.id = p_run.workspace_id;
  if v_cap is null then
    return p_run.budget_ids;
  end if;
  if v_id is null then
    insert into pgflight.budgets (scope, workspace_id, day, limit_usd, started_at)
    values ('workspace_day', p_run.workspace_id, v_day, v_cap, p_now)
    on conflict (workspace_id, day) where scope = 'workspace_day' do nothing
    returning id, limit_usd into v_id, v_limit;
    if v_id is null then  -- created concurrently
      select b.id, b.limit_usd into v_id, v_limit from pgflight.budgets b
       where b.scope = 'workspace_day' and b.workspace_id = p_run.workspace_id and b.day = v_day;
    end if;
  end if;
  if v_limit is distinct from v_cap then
    update pgflight.budgets set limit_usd = v_cap where id = v_id;
  end if;
  return p_run.budget_ids || v_id;
end
$$;

COMMENT ON FUNCTION pgflight._call_budget_ids(p_run pgflight.agent_runs, p_now timestamp with time zone) IS 'Internal: ids of the budgets a call of this agent is charged to (tree budgets + today''s workspace budget).';

REVOKE ALL ON FUNCTION pgflight._call_budget_ids(p_run pgflight.agent_runs, p_now timestamp with time zone) FROM PUBLIC;

commit;
