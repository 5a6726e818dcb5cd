-- Deploy pgflight:internals/_fork_agent_budgets

begin;

set local role pgflight_owner;

-- The budgets of a fork, as begin_agent_run makes them for a root agent: the run's (the
-- workspace's max_run_usd) and the agent step's (its max_usd, USD, and max_wall_s, seconds), each
-- only when it has a cap. Returns their ids, run first.
CREATE OR REPLACE FUNCTION pgflight._fork_agent_budgets(p_workspace_id bigint, p_run_id bigint, p_step_id bigint, p_max_run_usd numeric, p_max_usd numeric, p_max_wall_s double precision, p_now timestamp with time zone) RETURNS bigint[]
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ids bigint[] := '{}';
  v_id bigint;
begin
  if p_max_run_usd is not null then
    insert into pgflight.budgets (scope, workspace_id, run_id, limit_usd, started_at)
    values ('run', p_workspace_id, p_run_id, p_max_run_usd, p_now)
    returning id into v_id;
    v_ids := array[v_id];
  end if;
  if p_max_usd is not null or p_max_wall_s is not null then
    insert into pgflight.budgets (scope, workspace_id, run_id, step_id, limit_usd, max_wall_s, started_at)
    values ('step', p_workspace_id, p_run_id, p_step_id, p_max_usd, p_max_wall_s, p_now)
    returning id into v_id;
    v_ids := v_ids || v_id;
  end if;
  return v_ids;
end
$$;

COMMENT ON FUNCTION pgflight._fork_agent_budgets(p_workspace_id bigint, p_run_id bigint, p_step_id bigint, p_max_run_usd numeric, p_max_usd numeric, p_max_wall_s double precision, p_now timestamp with time zone) IS 'Internal (fork_agent): the fork''s run budget (max_run_usd) and agent step budget (max_usd USD, max_wall_s seconds), each when capped; returns their ids.';

REVOKE ALL ON FUNCTION pgflight._fork_agent_budgets(p_workspace_id bigint, p_run_id bigint, p_step_id bigint, p_max_run_usd numeric, p_max_usd numeric, p_max_wall_s double precision, p_now timestamp with time zone) FROM PUBLIC;

commit;
