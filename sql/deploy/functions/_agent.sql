-- Deploy pgflight:functions/_agent
-- requires: tables/agent_runs tables/traces tables/costs tables/budgets tables/model_prices functions/_internals
-- Internal helpers of the agent API: the fence every agent write passes, pricing, and the budget
-- arithmetic (lock in id order, check, move, release; admission of a model call). None is granted
-- to any role. Hot-path rule: each API function reads pgflight._now() once and passes it down.
begin;
set local role pgflight_owner;

-- The fence of every agent write: the attempt must be claimed or running with this token (else
-- ZF001 / ZF002 / ZF003 from _reject_write) and the agent run must belong to its step (else ZF003).
-- One statement locks the attempt FOR SHARE (a concurrent reclaim skips it, a cancel waits for us)
-- and then the agent run FOR UPDATE (one writer per agent). Returns the agent run row.
create function pgflight._agent_fence(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_operation text)
returns pgflight.agent_runs
language plpgsql volatile
set search_path = ''
as $$
declare
  v_run pgflight.agent_runs;
begin
  select r.* into v_run
    from pgflight.step_attempts a
    join pgflight.agent_runs r on r.step_id = a.step_id
   where a.id = p_attempt_id and a.fencing_token = p_token and a.status in ('claimed', 'running')
     and r.id = p_agent_run_id
     for share of a for update of r;
  if found then
    return v_run;
  end if;
  perform 1 from pgflight.step_attempts a
   where a.id = p_attempt_id and a.fencing_token = p_token and a.status in ('claimed', 'running');
  if not found then
    perform pgflight._reject_write(p_attempt_id, p_token, p_operation);
  end if;
  raise exception using
    errcode = 'ZF003',
    message = format('unknown agent run %s for attempt %s', p_agent_run_id, p_attempt_id),
    hint    = 'Use the agent_run_id that begin_agent_run returned for this step.';
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
-- first use and kept at the workspace's current cap. In no particular order (admission locks them
-- in id order). The common case (the day's row exists at the current cap) is one query.
create function pgflight._call_budget_ids(p_run pgflight.agent_runs, p_now timestamptz)
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
create function pgflight._raise_budget_exceeded(p_refusal jsonb)
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
create function pgflight._move_budget(p_ids bigint[], p_reserve numeric, p_spend numeric, p_release numeric,
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
  perform pgflight._move_budget(v_run.reserved_budget_ids, 0, 0, v_run.reserved_usd, false, null, 'release');
  update pgflight.agent_runs
     set reserved_usd = 0, reserved_attempt_id = null, reserved_iteration = null, reserved_budget_ids = null
   where id = p_agent_run_id;
end
$$;
comment on function pgflight._release_reservation(bigint) is 'Internal: release an agent run''s USD reservation.';

-- The refusal (see _move_budget) when the agent may not make model call number p_iteration (its
-- max_iterations), else null.
create function pgflight._iteration_refusal(p_run pgflight.agent_runs, p_iteration integer)
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
create function pgflight._reserve(p_run pgflight.agent_runs, p_attempt_id bigint, p_iteration integer,
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

-- Store tool_result blocks (a JSON array; each names its call by tool_use_id) as the results of
-- their tool calls in agent run p_run_id, set-based: the row of each call (seq 1000 + the
-- tool_use's seq) is written or, when in flight or interrupted, completed; a call already
-- completed keeps its first result (as does the first of two results for one call in the array).
-- Returns the tool_use ids stored now. Errors: 22023 not an array of tool_result blocks with a
-- tool_use_id, ZF003 a tool_use_id with no tool_use in the transcript (nothing stored).
create function pgflight._store_tool_results(p_run_id bigint, p_attempt_id bigint, p_results jsonb, p_now timestamptz)
returns text[]
language plpgsql volatile
set search_path = ''
as $$
declare
  v_missing text;
  v_stored text[];
begin
  if p_results is null or jsonb_typeof(p_results) <> 'array'
     or exists (select from jsonb_array_elements(p_results) e(v)
                 where jsonb_typeof(e.v) <> 'object' or e.v ->> 'type' is distinct from 'tool_result'
                    or e.v ->> 'tool_use_id' is null) then
    raise exception using errcode = '22023', message = 'results must be tool_result blocks',
      hint = '[{"type": "tool_result", "tool_use_id": "...", "content": "..."}, ...]';
  end if;
  with r as (
    select distinct on (e.v ->> 'tool_use_id') e.v ->> 'tool_use_id' as tid, e.v as result
      from jsonb_array_elements(p_results) with ordinality e(v, ord)
     order by e.v ->> 'tool_use_id', e.ord
  ), j as (
    select r.tid, r.result, u.iteration, u.seq, u.tool_name
      from r left join pgflight.traces u
        on u.agent_run_id = p_run_id and u.tool_use_id = r.tid and u.block_type = 'tool_use'
  ), up as (
    insert into pgflight.traces as t (agent_run_id, iteration, seq, role, block_type, tool_use_id, tool_name,
                                      content, status, tokens, attempt_id, created_at, updated_at)
    select p_run_id, j.iteration, 1000 + j.seq, 'user', 'tool_result', j.tid, j.tool_name, j.result, 'completed',
           ceil(length(j.result::text) / 4.0)::integer, p_attempt_id, p_now, p_now
      from j where j.seq is not null
    on conflict on constraint block_is_unique do update
      set content = excluded.content, status = 'completed', tokens = excluded.tokens,
          attempt_id = excluded.attempt_id, updated_at = excluded.updated_at
      where t.status <> 'completed'
    returning t.tool_use_id
  )
  select (select min(j.tid) from j where j.seq is null), (select coalesce(array_agg(up.tool_use_id), '{}') from up)
    into v_missing, v_stored;
  if v_missing is not null then
    raise exception using errcode = 'ZF003',
      message = format('no tool_use %L in agent run %s', v_missing, p_run_id),
      hint = 'Record the model call (record_model_call) before completing its tool calls.';
  end if;
  return v_stored;
end
$$;
comment on function pgflight._store_tool_results(bigint, bigint, jsonb, timestamptz) is
  'Internal: store tool_result blocks set-based (first result wins); returns the ids stored. 22023, ZF003.';

commit;
