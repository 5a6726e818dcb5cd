-- Deploy pgflight:functions/_agent
-- requires: tables/agent_runs tables/traces tables/costs tables/budgets tables/model_prices functions/_internals
-- Internal helpers of the agent API: the fence every agent write passes, pricing, and the budget
-- arithmetic (lock in id order, check-and-reserve, settle, release). None is granted to any role.
begin;
set local role pgflight_owner;

-- The fence of every agent write: the attempt must be claimed or running with this token (else
-- ZF001 / ZF002 / ZF003 from _reject_write) and the agent run must belong to its step (else ZF003).
-- Locks the attempt FOR SHARE (a concurrent reclaim skips it, a cancel waits for us) and then the
-- agent run FOR UPDATE (one writer per agent). Returns the agent run row.
create function pgflight._agent_fence(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_operation text)
returns pgflight.agent_runs
language plpgsql volatile
set search_path = ''
as $$
declare
  v_step bigint;
  v_run pgflight.agent_runs;
begin
  select a.step_id into v_step from pgflight.step_attempts a
   where a.id = p_attempt_id and a.fencing_token = p_token and a.status in ('claimed', 'running')
     for share;
  if not found then
    perform pgflight._reject_write(p_attempt_id, p_token, p_operation);
  end if;
  select r.* into v_run from pgflight.agent_runs r where r.id = p_agent_run_id for update;
  if not found or v_run.step_id <> v_step then
    raise exception using
      errcode = 'ZF003',
      message = format('unknown agent run %s for attempt %s', p_agent_run_id, p_attempt_id),
      hint    = 'Use the agent_run_id that begin_agent_run returned for this step.';
  end if;
  return v_run;
end
$$;
comment on function pgflight._agent_fence(bigint, bigint, bigint, text) is
  'Internal: fence an agent write by (attempt, token); returns the agent run, locked. ZF001, ZF002, ZF003.';

-- USD of one model call: usage (Messages API field names: input_tokens, output_tokens,
-- cache_creation_input_tokens, cache_read_input_tokens) times the price of the longest
-- model_prices.model that prefixes p_model, per million tokens. 22023 when no price matches.
create function pgflight._price_usd(p_model text, p_usage jsonb)
returns numeric
language plpgsql stable
set search_path = ''
as $$
declare
  v_p pgflight.model_prices;
begin
  select p.* into v_p from pgflight.model_prices p
   where left(p_model, length(p.model)) = p.model
   order by length(p.model) desc limit 1;
  if not found then
    raise exception using
      errcode = '22023',
      message = format('no price for model %L', p_model),
      hint    = 'Add the model (or a prefix of its name) to pgflight.model_prices.';
  end if;
  return (coalesce((p_usage ->> 'input_tokens')::numeric, 0) * v_p.input_usd_per_mtok
        + coalesce((p_usage ->> 'output_tokens')::numeric, 0) * v_p.output_usd_per_mtok
        + coalesce((p_usage ->> 'cache_creation_input_tokens')::numeric, 0) * v_p.cache_write_usd_per_mtok
        + coalesce((p_usage ->> 'cache_read_input_tokens')::numeric, 0) * v_p.cache_read_usd_per_mtok) / 1000000;
end
$$;
comment on function pgflight._price_usd(text, jsonb) is
  'Internal: USD of a call from its usage and pgflight.model_prices (longest prefix). 22023 unknown model.';

-- The budgets a model call of this agent is charged to: its tree budgets (run, capped ancestors,
-- itself) and, when the workspace has a daily cap, today's (UTC) workspace_day row, created on
-- first use and kept at the workspace's current cap.
create function pgflight._call_budget_ids(p_run pgflight.agent_runs, p_now timestamptz)
returns bigint[]
language plpgsql volatile
set search_path = ''
as $$
declare
  v_cap numeric;
  v_day date := (p_now at time zone 'UTC')::date;
  v_id bigint;
  v_limit numeric;
begin
  select w.daily_usd_cap into v_cap from pgflight.workspaces w where w.id = p_run.workspace_id;
  if v_cap is null then
    return p_run.budget_ids;
  end if;
  select b.id, b.limit_usd into v_id, v_limit from pgflight.budgets b
   where b.scope = 'workspace_day' and b.workspace_id = p_run.workspace_id and b.day = v_day;
  if not found then
    insert into pgflight.budgets (scope, workspace_id, day, limit_usd, started_at)
    values ('workspace_day', p_run.workspace_id, v_day, v_cap, p_now)
    on conflict (workspace_id, day) where scope = 'workspace_day' do nothing;
    select b.id, b.limit_usd into v_id, v_limit from pgflight.budgets b
     where b.scope = 'workspace_day' and b.workspace_id = p_run.workspace_id and b.day = v_day;
  end if;
  if v_limit is distinct from v_cap then
    update pgflight.budgets set limit_usd = v_cap where id = v_id;
  end if;
  return array(select distinct u from unnest(p_run.budget_ids || v_id) u order by u);
end
$$;
comment on function pgflight._call_budget_ids(pgflight.agent_runs, timestamptz) is
  'Internal: ids of the budgets a call of this agent is charged to (tree budgets + today''s workspace budget).';

-- Move money on a set of budgets, atomically: reserved += p_reserve - p_release, spent += p_spend.
-- With p_check, the move is an admission: each capped budget must satisfy
-- spent + reserved - p_release + p_reserve + p_spend <= limit in the very UPDATE that moves it,
-- so concurrent admissions serialise on the row and at most the money that fits is admitted (C24);
-- when one budget refuses, ZF007 rolls back the moves on the others. Rows are locked in id order
-- first, so two transactions touching several budgets never deadlock. Wall-time caps are checked
-- here too (only on admission).
create function pgflight._move_budget(p_ids bigint[], p_reserve numeric, p_spend numeric, p_release numeric,
                                      p_check boolean, p_now timestamptz, p_what text)
returns void
language plpgsql volatile
set search_path = ''
as $$
declare
  v_locked integer;
  v_moved integer;
  v_bad pgflight.budgets;
begin
  if p_ids is null or cardinality(p_ids) = 0 then
    return;
  end if;
  perform 1 from pgflight.budgets b where b.id = any (p_ids) order by b.id for update;
  get diagnostics v_locked = row_count;
  if p_check then
    select b.* into v_bad from pgflight.budgets b
     where b.id = any (p_ids) and b.max_wall_s is not null and p_now > b.started_at + make_interval(secs => b.max_wall_s)
     order by b.id limit 1;
    if found then
      raise exception using
        errcode = 'ZF007',
        message = format('budget exceeded: wall time of %s budget %s', v_bad.scope, v_bad.id),
        detail  = format('scope=%s budget_id=%s cap=max_wall_s max_wall_s=%s started_at=%s now=%s (%s)',
                         v_bad.scope, v_bad.id, v_bad.max_wall_s, v_bad.started_at, p_now, p_what),
        hint    = 'The tree ran past its wall-time cap; raise max_wall_s for the run or agent, or end the work.';
    end if;
  end if;
  -- the admission: check and move in one statement per row, under the row lock
  update pgflight.budgets b
     set reserved_usd = greatest(b.reserved_usd + p_reserve - p_release, 0),
         spent_usd = b.spent_usd + p_spend
   where b.id = any (p_ids)
     and (not p_check or b.limit_usd is null
          or b.spent_usd + b.reserved_usd - p_release + p_reserve + p_spend <= b.limit_usd);
  get diagnostics v_moved = row_count;
  if v_moved < v_locked then
    select b.* into v_bad from pgflight.budgets b
     where b.id = any (p_ids) and b.limit_usd is not null
       and b.spent_usd + b.reserved_usd - p_release + p_reserve + p_spend > b.limit_usd
     order by b.id limit 1;
    raise exception using
      errcode = 'ZF007',
      message = format('budget exceeded: %s budget %s has %s USD left, the call needs %s USD',
                       v_bad.scope, v_bad.id,
                       greatest(v_bad.limit_usd - v_bad.spent_usd - v_bad.reserved_usd, 0)::numeric(16, 6),
                       (p_reserve + p_spend)::numeric(16, 6)),
      detail  = format('scope=%s budget_id=%s cap=usd limit_usd=%s spent_usd=%s reserved_usd=%s needed_usd=%s (%s)',
                       v_bad.scope, v_bad.id, v_bad.limit_usd, v_bad.spent_usd, v_bad.reserved_usd,
                       p_reserve + p_spend, p_what),
      hint    = case v_bad.scope
                  when 'workspace_day' then 'The workspace reached its daily USD cap (workspaces.daily_usd_cap); wait for the next UTC day or raise the cap.'
                  when 'run' then 'The run reached its USD cap (max_usd); raise it or end the run.'
                  else 'The agent''s tree reached its USD cap (max_usd of the agent); raise it or end the work.' end;
  end if;
end
$$;
comment on function pgflight._move_budget(bigint[], numeric, numeric, numeric, boolean, timestamptz, text) is
  'Internal: reserve / spend / release USD on budgets atomically; with p_check an admission that raises ZF007.';

-- Give back the reservation an agent run holds (a lapsed attempt, or one superseded by a retry).
create function pgflight._release_reservation(p_agent_run_id bigint)
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
  perform pgflight._move_budget(v_run.reserved_budget_ids, 0, 0, v_run.reserved_usd, false, pgflight._now(), 'release');
  update pgflight.agent_runs
     set reserved_usd = 0, reserved_attempt_id = null, reserved_iteration = null, reserved_budget_ids = null
   where id = p_agent_run_id;
end
$$;
comment on function pgflight._release_reservation(bigint) is 'Internal: release an agent run''s USD reservation.';

-- ZF007 when the agent may not make model call number p_iteration (its max_iterations).
create function pgflight._check_iterations(p_run pgflight.agent_runs, p_iteration integer)
returns void
language plpgsql immutable
set search_path = ''
as $$
begin
  if p_iteration > p_run.max_iterations then
    raise exception using
      errcode = 'ZF007',
      message = format('budget exceeded: agent run %s may make %s model calls, this is call %s',
                       p_run.id, p_run.max_iterations, p_iteration),
      detail  = format('scope=agent cap=max_iterations max_iterations=%s iteration=%s', p_run.max_iterations, p_iteration),
      hint    = 'Raise max_iterations for the agent (input caps, or the run''s max_iterations option).';
  end if;
end
$$;
comment on function pgflight._check_iterations(pgflight.agent_runs, integer) is
  'Internal: ZF007 when p_iteration passes the agent''s max_iterations.';

commit;
