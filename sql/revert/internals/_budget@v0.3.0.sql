-- Revert pgflight:internals/_budget@v0.3.0: restores the previous definition, deploy/internals/_budget@v0.2.0.sql (written by scripts/gen_sql_scripts.py)
-- Defines: _call_budget_ids(), _raise_budget_exceeded(), _move_budget(), _release_reservation(), _iteration_refusal(), _reserve().
-- Budget arithmetic: which budgets a call charges, lock in id order, check, move, release; admission of a model call.
-- None is granted to any role.
begin;
set local role pgflight_owner;

-- The budgets a model call of this agent is charged to: its tree budgets (run, capped ancestors,
-- itself) and, when the workspace has a daily cap, today's (UTC) workspace_day row, created on
-- first use and kept at the workspace's current cap. In no particular order (admission locks them
-- in id order). The common case (the day's row exists at the current cap) is one query.
create or replace function pgflight._call_budget_ids(p_run pgflight.agent_runs, p_now timestamptz)
returns bigint[]
language plpgsql volatile
set search_path = ''
as $$
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
comment on function pgflight._call_budget_ids(pgflight.agent_runs, timestamptz) is
  'Internal: ids of the budgets a call of this agent is charged to (tree budgets + today''s workspace budget).';

-- Raise ZF007 from a refusal {message, detail, hint} (see _move_budget, _iteration_refusal).
create or replace function pgflight._raise_budget_exceeded(p_refusal jsonb)
returns void
language plpgsql immutable
set search_path = ''
as $$
begin
  raise exception using
    errcode = 'ZF007',
    message = p_refusal ->> 'message',
    detail  = coalesce(p_refusal ->> 'detail', ''),
    hint    = coalesce(p_refusal ->> 'hint', '');
end
$$;
comment on function pgflight._raise_budget_exceeded(jsonb) is 'Internal: raise ZF007 with a refusal''s message, detail and hint.';

-- Move money on a set of budgets, atomically: reserved += p_reserve - p_release, spent += p_spend.
-- The rows are locked in id order first (SELECT ... FOR UPDATE returns each row's latest committed
-- version), so two transactions touching several budgets never deadlock and concurrent admissions
-- serialise on each row (C24). With p_check the move is an admission: under those locks every
-- budget must be within its wall time (max_wall_s since started_at) and satisfy
-- spent + reserved - p_release + p_reserve + p_spend <= limit; the first budget (in id order) that
-- does not is returned as a refusal {message, detail, hint} and nothing is moved. Returns null when
-- the money moved.
create or replace function pgflight._move_budget(p_ids bigint[], p_reserve numeric, p_spend numeric, p_release numeric,
                                      p_check boolean, p_now timestamptz, p_what text)
returns jsonb
language plpgsql volatile
set search_path = ''
as $$
declare
  v_b pgflight.budgets;
begin
  if p_ids is null or cardinality(p_ids) = 0 then
    return null;
  end if;
  if p_check then
    for v_b in select b.* from pgflight.budgets b where b.id = any (p_ids) order by b.id for update loop
      if v_b.max_wall_s is not null and p_now > v_b.started_at + make_interval(secs => v_b.max_wall_s) then
        return jsonb_build_object(
          'message', format('budget exceeded: wall time of %s budget %s', v_b.scope, v_b.id),
          'detail',  format('scope=%s budget_id=%s cap=max_wall_s max_wall_s=%s started_at=%s now=%s (%s)',
                            v_b.scope, v_b.id, v_b.max_wall_s, v_b.started_at, p_now, p_what),
          'hint',    'The tree ran past its wall-time cap; raise max_wall_s for the run or agent, or end the work.');
      end if;
      if v_b.limit_usd is not null
         and v_b.spent_usd + v_b.reserved_usd - p_release + p_reserve + p_spend > v_b.limit_usd then
        return jsonb_build_object(
          'message', format('budget exceeded: %s budget %s has %s USD left, the call needs %s USD',
                            v_b.scope, v_b.id,
                            greatest(v_b.limit_usd - v_b.spent_usd - v_b.reserved_usd, 0)::numeric(16, 6),
                            (p_reserve + p_spend)::numeric(16, 6)),
          'detail',  format('scope=%s budget_id=%s cap=usd limit_usd=%s spent_usd=%s reserved_usd=%s needed_usd=%s (%s)',
                            v_b.scope, v_b.id, v_b.limit_usd, v_b.spent_usd, v_b.reserved_usd,
                            p_reserve + p_spend, p_what),
          'hint',    case v_b.scope
                       when 'workspace_day' then 'The workspace reached its daily USD cap (workspaces.daily_usd_cap); wait for the next UTC day or raise the cap.'
                       when 'run' then 'The run reached its USD cap (max_usd); raise it or end the run.'
                       else 'The agent''s tree reached its USD cap (max_usd of the agent); raise it or end the work.' end);
      end if;
    end loop;
  else
    perform 1 from pgflight.budgets b where b.id = any (p_ids) order by b.id for update;
  end if;
  update pgflight.budgets b
     set reserved_usd = greatest(b.reserved_usd + p_reserve - p_release, 0),
         spent_usd = b.spent_usd + p_spend
   where b.id = any (p_ids);
  return null;
end
$$;
comment on function pgflight._move_budget(bigint[], numeric, numeric, numeric, boolean, timestamptz, text) is
  'Internal: reserve / spend / release USD on budgets atomically; with p_check an admission that returns '
  'the refusal (nothing moved) instead of moving.';

-- Give back the reservation an agent run holds (a lapsed attempt, or one superseded by a retry).
create or replace function pgflight._release_reservation(p_agent_run_id bigint)
returns void
language plpgsql volatile
set search_path = ''
as $$
declare
  v_run pgflight.agent_runs;
begin
  select r.* into v_run from pgflight.agent_runs r where r.id = p_agent_run_id;
  if v_run.reserved_attempt_id is null then
    return;
  end if;
  perform pgflight._move_budget(v_run.reserved_budget_ids, 0, 0, v_run.reserved_usd, false, null, 'release');
  update pgflight.agent_runs
     set reserved_usd = 0, reserved_attempt_id = null, reserved_iteration = null, reserved_budget_ids = null
   where id = p_agent_run_id;
end
$$;
comment on function pgflight._release_reservation(bigint) is 'Internal: release an agent run''s USD reservation.';

-- The refusal (see _move_budget) when the agent may not make model call number p_iteration (its
-- max_iterations), else null.
create or replace function pgflight._iteration_refusal(p_run pgflight.agent_runs, p_iteration integer)
returns jsonb
language plpgsql immutable
set search_path = ''
as $$
begin
  if p_iteration <= p_run.max_iterations then
    return null;
  end if;
  return jsonb_build_object(
    'message', format('budget exceeded: agent run %s may make %s model calls, this is call %s',
                      p_run.id, p_run.max_iterations, p_iteration),
    'detail',  format('scope=agent cap=max_iterations max_iterations=%s iteration=%s', p_run.max_iterations, p_iteration),
    'hint',    'Raise max_iterations for the agent (input caps, or the run''s max_iterations option).');
end
$$;
comment on function pgflight._iteration_refusal(pgflight.agent_runs, integer) is
  'Internal: the ZF007 refusal when p_iteration passes the agent''s max_iterations, else null.';

-- Admission of model call p_iteration of the agent run p_run (fenced and locked by the caller):
-- releases a reservation of another attempt or iteration, checks the iteration cap and the
-- wall-time and USD caps of every budget that binds the call, reserves p_est_usd (USD) on them and
-- records the reservation on the agent run. A reservation already held for (p_attempt_id,
-- p_iteration) is kept. Returns null when admitted, else the refusal (nothing reserved; the caller
-- raises it with _raise_budget_exceeded or hands it to the client).
create or replace function pgflight._reserve(p_run pgflight.agent_runs, p_attempt_id bigint, p_iteration integer,
                                  p_est_usd numeric, p_now timestamptz)
returns jsonb
language plpgsql volatile
set search_path = ''
as $$
declare
  v_ids bigint[];
  v_refusal jsonb;
begin
  if p_run.reserved_attempt_id = p_attempt_id and p_run.reserved_iteration = p_iteration then
    return null;
  end if;
  if p_run.reserved_attempt_id is not null then
    perform pgflight._move_budget(p_run.reserved_budget_ids, 0, 0, p_run.reserved_usd, false, p_now, 'release');
  end if;
  v_refusal := pgflight._iteration_refusal(p_run, p_iteration);
  if v_refusal is null then
    v_ids := pgflight._call_budget_ids(p_run, p_now);
    v_refusal := pgflight._move_budget(v_ids, p_est_usd, 0, 0, true, p_now,
                                       format('agent_run=%s iteration=%s', p_run.id, p_iteration));
  end if;
  if v_refusal is null then
    update pgflight.agent_runs
       set reserved_usd = p_est_usd, reserved_attempt_id = p_attempt_id, reserved_iteration = p_iteration,
           reserved_budget_ids = v_ids, updated_at = p_now
     where id = p_run.id;
  elsif p_run.reserved_attempt_id is not null then
    update pgflight.agent_runs
       set reserved_usd = 0, reserved_attempt_id = null, reserved_iteration = null, reserved_budget_ids = null,
           updated_at = p_now
     where id = p_run.id;
  end if;
  return v_refusal;
end
$$;
comment on function pgflight._reserve(pgflight.agent_runs, bigint, integer, numeric, timestamptz) is
  'Internal: admission of a model call (caps checked, est USD reserved); returns null or the refusal.';

commit;
