-- Deploy pgflight:functions/begin_agent_run

begin;

set local role pgflight_owner;

-- Start (or resume) the agent of the step this attempt runs: one agent_runs row per step, kept
-- across attempts, so a retry finds its transcript. The first call stores the task as iteration 0
-- and resolves the caps and the tree budgets; later calls (a new attempt, a woken parent) return
-- the same row and release a USD reservation left by an earlier attempt.
-- options: model (required on the first call), system (the system prompt), task (the first user
-- message: a string), max_iterations (default: the run's max_iterations, else 25), max_tool_calls
-- (default: the run's, else 50), max_usd (USD) and max_wall_s (seconds): a budget of this agent
-- and every descendant, on top of the run's max_usd / max_wall_s and any ancestor agent's.
-- Errors: ZF001, ZF002, ZF003 (fence), 22023 bad options.
-- Planner settings: seq scans off, so the plans a worker's session keeps do not read
-- steps and agent_runs whole once those tables grew (the ancestors walk hash-joined a sequential
-- scan of steps, made while it was small); jit off, so the penalty of a scan left sequential (a
-- one-row table) cannot cross jit_above_cost and compile the statement.
CREATE OR REPLACE FUNCTION pgflight.begin_agent_run(p_attempt_id bigint, p_token bigint, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(agent_run_id bigint, created boolean, iterations integer, tool_calls integer, usd numeric, max_iterations integer, max_tool_calls integer)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_att record;
  v_run record;
  v_agent pgflight.agent_runs;
  v_ids bigint[] := '{}';
  v_id bigint;
  v_model text;
  v_system text;
  v_max_usd double precision;
  v_max_wall double precision;
begin
  -- every option checked against its spec first (docs/options.md): 22023 naming the key
  p_options := pgflight._check_options('begin_agent_run', p_options);
  select a.step_id, a.run_id into v_att from pgflight.step_attempts a
   where a.id = p_attempt_id and a.fencing_token = p_token and a.status in ('claimed', 'running')
     -- only the login whose worker holds the attempt (else ZF012 from _reject_write)
     and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user)
     for share of a;
  if not found then
    perform pgflight._reject_write(p_attempt_id, p_token, 'begin_agent_run');
  end if;
  select r.* into v_agent from pgflight.agent_runs r where r.step_id = v_att.step_id for update;
  if found then
    if v_agent.reserved_attempt_id is distinct from p_attempt_id then
      perform pgflight._release_reservation(v_agent.id);
    end if;
    return query select v_agent.id, false, v_agent.iterations, v_agent.tool_calls, v_agent.usd,
                        v_agent.max_iterations, v_agent.max_tool_calls;
    return;
  end if;

  v_model := pgflight._opt_text(p_options, 'model', null);
  if v_model is null or btrim(v_model) = '' then
    raise exception using errcode = '22023', message = 'option model is required',
      hint = 'e.g. {"model": "claude-sonnet-4-5", "system": "...", "task": "..."}';
  end if;
  v_system := pgflight._opt_text(p_options, 'system', '');
  v_max_usd := pgflight._opt_num(p_options, 'max_usd', null);
  v_max_wall := pgflight._opt_num(p_options, 'max_wall_s', null);
  if v_max_wall is not null then
    perform pgflight._require_positive('max_wall_s', v_max_wall);
  end if;
  if v_max_usd < 0 then
    raise exception using errcode = '22023', message = 'max_usd must not be negative';
  end if;
  select r.id, r.workspace_id, r.max_usd, r.max_wall_s, r.max_iterations, r.max_tool_calls, r.created_at
    into v_run from pgflight.runs r where r.id = v_att.run_id;

  -- the tree budgets: the nearest ancestor agent already holds the run's and its ancestors'
  select ar.budget_ids into v_ids from (
    with recursive up as (
      select s.parent_id as id, 1 as d from pgflight.steps s where s.id = v_att.step_id
      union all
      select s.parent_id, up.d + 1 from pgflight.steps s join up on s.id = up.id where s.parent_id is not null
    ) select up.id, up.d from up) u
    join pgflight.agent_runs ar on ar.step_id = u.id
   order by u.d limit 1;
  if not found then
    v_ids := '{}';
    if v_run.max_usd is not null or v_run.max_wall_s is not null then
      insert into pgflight.budgets (scope, workspace_id, run_id, limit_usd, max_wall_s, started_at)
      values ('run', v_run.workspace_id, v_run.id, v_run.max_usd, v_run.max_wall_s, v_run.created_at)
      on conflict (run_id) where scope = 'run' do nothing;
      select b.id into v_id from pgflight.budgets b where b.scope = 'run' and b.run_id = v_run.id;
      v_ids := array[v_id];
    end if;
  end if;
  if v_max_usd is not null or v_max_wall is not null then
    insert into pgflight.budgets (scope, workspace_id, run_id, step_id, limit_usd, max_wall_s, started_at)
    values ('step', v_run.workspace_id, v_run.id, v_att.step_id, v_max_usd::numeric, v_max_wall, v_now)
    on conflict (step_id) where scope = 'step' do nothing;
    select b.id into v_id from pgflight.budgets b where b.scope = 'step' and b.step_id = v_att.step_id;
    v_ids := v_ids || v_id;
  end if;

  insert into pgflight.agent_runs (step_id, run_id, workspace_id, model, system_prompt, system_prompt_hash,
                                   max_iterations, max_tool_calls, budget_ids, options, created_at, updated_at)
  values (v_att.step_id, v_run.id, v_run.workspace_id, v_model, v_system,
          encode(sha256(convert_to(v_system, 'UTF8')), 'hex'),
          pgflight._opt_num(p_options, 'max_iterations', coalesce(v_run.max_iterations, 25))::integer,
          pgflight._opt_num(p_options, 'max_tool_calls', coalesce(v_run.max_tool_calls, 50))::integer,
          array(select distinct u from unnest(v_ids) u order by u),
          coalesce(p_options, '{}'), v_now, v_now)
  returning * into v_agent;
  insert into pgflight.traces (agent_run_id, iteration, seq, role, block_type, content, status, tokens, attempt_id, created_at, updated_at)
  values (v_agent.id, 0, 0, 'user', 'text',
          jsonb_build_object('type', 'text', 'text', pgflight._opt_text(p_options, 'task', '')),
          'completed', ceil(length(pgflight._opt_text(p_options, 'task', '')) / 4.0)::integer, p_attempt_id, v_now, v_now);
  return query select v_agent.id, true, 0, 0, 0::numeric, v_agent.max_iterations, v_agent.max_tool_calls;
end
$$;

COMMENT ON FUNCTION pgflight.begin_agent_run(p_attempt_id bigint, p_token bigint, p_options jsonb) IS 'Start or resume the agent of a held step; returns (agent_run_id, created, totals, caps). Options (docs/options.md): model, system, task, max_iterations, max_tool_calls, max_usd, max_wall_s. Errors: ZF001, ZF002, ZF003, 22023.';

REVOKE ALL ON FUNCTION pgflight.begin_agent_run(p_attempt_id bigint, p_token bigint, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.begin_agent_run(p_attempt_id bigint, p_token bigint, p_options jsonb) TO pgflight_worker;

commit;
