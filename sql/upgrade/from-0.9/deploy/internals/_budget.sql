-- Deploy pgflight:internals/_budget
-- Defines: _call_budget_ids(), _raise_budget_exceeded(), _move_budget(), _release_reservation(), _iteration_refusal(), _token_estimate(), _token_admission(), _settle_tokens(), _reserve().
-- Budget arithmetic: which budgets a call charges, lock in id order, check, move, release; the
-- workspace's model tokens per minute; admission of a model call.
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
set search_path = pg_catalog, pg_temp
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

-- Raise a refusal {message, detail, hint[, sqlstate]} (see _move_budget, _iteration_refusal,
-- _token_admission): ZF007, or the refusal's sqlstate (ZF013 for model tokens per minute).
create or replace function pgflight._raise_budget_exceeded(p_refusal jsonb)
returns void
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
begin
  raise exception using
    errcode = coalesce(p_refusal ->> 'sqlstate', 'ZF007'),
    message = p_refusal ->> 'message',
    detail  = coalesce(p_refusal ->> 'detail', ''),
    hint    = coalesce(p_refusal ->> 'hint', '');
end
$$;
comment on function pgflight._raise_budget_exceeded(jsonb) is
  'Internal: raise a refusal (ZF007, or its sqlstate: ZF013) with its message, detail and hint.';

-- Move money on a set of budgets, atomically: reserved += p_reserve - p_release, spent += p_spend.
-- The rows are locked in id order first (SELECT ... FOR UPDATE returns each row's latest committed
-- version), so two transactions touching several budgets never deadlock and concurrent admissions
-- serialise on each row (C24). With p_check the move is an admission: under those locks every
-- budget must be within its wall time (max_wall_s since started_at) and satisfy
-- spent + reserved - p_release + p_reserve + p_spend <= limit; the first budget (in id order) that
-- does not is returned as a refusal {message, detail, hint} and nothing is moved. Returns null when
-- the money moved. Planned with seq scans off (issue 18): the plans a session keeps were made
-- while budgets was small read the whole table at every move once it grew; jit off, so that
-- penalty cannot cross jit_above_cost.
create or replace function pgflight._move_budget(p_ids bigint[], p_reserve numeric, p_spend numeric, p_release numeric,
                                      p_check boolean, p_now timestamptz, p_what text)
returns jsonb
language plpgsql volatile
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
set jit = off
as $$
declare
  v_b pgflight.budgets;
begin
  if p_ids is null or cardinality(p_ids) = 0 then
    return null;
  end if;
  -- one statement locks every row in id order (the materialised CTE's FOR UPDATE: no outer qual is
  -- pushed into it, so every row is locked) and, for an admission, returns the first that refuses
  with locked as materialized (
    select b.* from pgflight.budgets b where b.id = any (p_ids) order by b.id for update
  )
  select x.* into v_b
    from locked x
   where p_check
     and ((x.max_wall_s is not null and p_now > x.started_at + make_interval(secs => x.max_wall_s))
          or (x.limit_usd is not null and x.spent_usd + x.reserved_usd - p_release + p_reserve + p_spend > x.limit_usd))
   order by x.id
   limit 1;
  if found then
    if v_b.max_wall_s is not null and p_now > v_b.started_at + make_interval(secs => v_b.max_wall_s) then
      return jsonb_build_object(
        'message', format('budget exceeded: wall time of %s budget %s', v_b.scope, v_b.id),
        'detail',  format('scope=%s budget_id=%s cap=max_wall_s max_wall_s=%s started_at=%s now=%s (%s)',
                          v_b.scope, v_b.id, v_b.max_wall_s, v_b.started_at, p_now, p_what),
        'hint',    'The tree ran past its wall-time cap; raise max_wall_s for the run or agent, or end the work.');
    end if;
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

-- End the reservation an agent run holds (a lapsed attempt, or one superseded by a retry), and
-- forget the attempt that reserved (tables/agent_runs_hot): the run leaves agent_runs_reserved_idx.
-- The ledger never counts less than was spent: a reservation whose call was out
-- (reserved_call_out: the admission just before the request left, and no answer recorded since)
-- may have been answered and charged by the provider, and nobody can know. It is not released but
-- charged: a costs row marked unknown_outcome (and lease_lost: no iteration of the transcript is
-- claimed) with the reservation as its usd and the budgets it was taken on, spent on those budgets
-- and added to the agent's usd. A late answer of that attempt and iteration (record_orphan_cost)
-- settles it to the real figures; a row the late answer already wrote first is kept and the
-- reservation only released. A reservation taken ahead of its call (record_model_call's next
-- call, while the tools run) is released.
-- Seq scans off, as _move_budget.
create or replace function pgflight._release_reservation(p_agent_run_id bigint)
returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
set jit = off
as $$
declare
  v_run pgflight.agent_runs;
begin
  select r.* into v_run from pgflight.agent_runs r where r.id = p_agent_run_id;
  if v_run.reserved_attempt_id is null then
    return;
  end if;
  if v_run.reserved_iteration is not null and v_run.reserved_call_out then
    insert into pgflight.costs (agent_run_id, iteration, step_id, run_id, workspace_id, model, usd, attempt_id, at,
                                lease_lost, unknown_outcome, budget_ids)
    values (v_run.id, v_run.reserved_iteration, v_run.step_id, v_run.run_id, v_run.workspace_id, v_run.model,
            v_run.reserved_usd, v_run.reserved_attempt_id, pgflight._now(), true, true, v_run.reserved_budget_ids)
    on conflict (agent_run_id, iteration, attempt_id) where lease_lost do nothing;
    if found then
      perform pgflight._move_budget(v_run.reserved_budget_ids, 0, v_run.reserved_usd, v_run.reserved_usd, false, null,
                                    format('agent_run=%s iteration=%s unknown outcome: charged at its reservation',
                                           v_run.id, v_run.reserved_iteration));
      update pgflight.agent_runs set usd = usd + v_run.reserved_usd where id = p_agent_run_id;
    else
      perform pgflight._move_budget(v_run.reserved_budget_ids, 0, 0, v_run.reserved_usd, false, null, 'release');
    end if;
  elsif v_run.reserved_iteration is not null then
    perform pgflight._move_budget(v_run.reserved_budget_ids, 0, 0, v_run.reserved_usd, false, null, 'release');
  end if;
  update pgflight.agent_runs
     set reserved_usd = 0, reserved_attempt_id = null, reserved_iteration = null, reserved_budget_ids = null,
         reserved_call_out = false
   where id = p_agent_run_id;
end
$$;
comment on function pgflight._release_reservation(bigint) is
  'Internal: end an agent run''s USD reservation (charged as an unknown_outcome cost when its call was out, '
  'else released) and forget the attempt that reserved.';

-- The refusal (see _move_budget) when the agent may not make model call number p_iteration (its
-- max_iterations), else null.
create or replace function pgflight._iteration_refusal(p_run pgflight.agent_runs, p_iteration integer)
returns jsonb
language plpgsql immutable
set search_path = pg_catalog, pg_temp
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

-- Model tokens per minute (issue 15, workspace_limits.model_tokens_per_min): the tokens (input +
-- output) a call of this agent is expected to use: its average per call so far (0 for its first
-- call), at most p_limit. Admission adds it to the window and record_model_call replaces it by the
-- actual tokens; both compute it from the same totals (they change only when a call is recorded).
create or replace function pgflight._token_estimate(p_run pgflight.agent_runs, p_limit bigint)
returns bigint
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
begin
  if p_run.iterations = 0 then
    return 0;
  end if;
  return least(ceil((p_run.input_tokens + p_run.output_tokens)::numeric / p_run.iterations)::bigint, p_limit);
end
$$;
comment on function pgflight._token_estimate(pgflight.agent_runs, bigint) is
  'Internal: model tokens a call of this agent is expected to use (its average so far, at most p_limit).';

-- Admission against the workspace's model tokens per minute p_limit (the caller skips it for a
-- workspace without that limit): the tokens
-- of the workspace's rolling minute (model_token_windows: 5-second buckets; a bucket that overlaps
-- the last 60 s counts whole, so the check errs on the safe side) plus this call's estimate must
-- stay within the limit, and the window must not be full already. Admissions and settlements of
-- one workspace take turns on the engine_locks row 'model_tokens:<workspace id>' (an advisory key
-- before, which any login could hold and so stall every model call of the workspace; no login can
-- lock the row), so concurrent agents cannot both take
-- the last tokens. Admitted: the estimate is added to the current bucket and null returned.
-- Refused: nothing is added, and the refusal {sqlstate ZF013, message, detail, hint,
-- retry_after_s} says in how many seconds enough of the window will have passed (at least 1).
create or replace function pgflight._token_admission(p_run pgflight.agent_runs, p_limit bigint, p_now timestamptz)
returns jsonb
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_limit bigint := p_limit;
  v_est bigint := pgflight._token_estimate(p_run, p_limit);
  v_used bigint;
  v_free_at timestamptz;
  v_retry integer;
begin
  insert into pgflight.engine_locks (scope) values ('model_tokens:' || p_run.workspace_id) on conflict do nothing;
  perform from pgflight.engine_locks l where l.scope = 'model_tokens:' || p_run.workspace_id for update;
  select coalesce(sum(w.tokens), 0) into v_used
    from pgflight.model_token_windows w
   where w.workspace_id = p_run.workspace_id and w.bucket > p_now - interval '65 s';
  if v_used < v_limit and v_used + v_est <= v_limit then
    if v_est > 0 then
      insert into pgflight.model_token_windows as w (workspace_id, bucket, tokens)
      values (p_run.workspace_id, to_timestamp(floor(extract(epoch from p_now) / 5) * 5), v_est)
      on conflict on constraint model_token_window_is_unique do update set tokens = w.tokens + excluded.tokens;
    end if;
    return null;
  end if;
  -- the first bucket whose passing leaves room: a bucket starting at b leaves the window at b + 65 s
  select min(x.bucket) into v_free_at
    from (select w.bucket, sum(w.tokens) over (order by w.bucket) as passed
            from pgflight.model_token_windows w
           where w.workspace_id = p_run.workspace_id and w.bucket > p_now - interval '65 s') x
   where v_used - x.passed < v_limit and v_used - x.passed + v_est <= v_limit;
  v_retry := greatest(ceil(extract(epoch from coalesce(v_free_at, p_now) + interval '65 s' - p_now)), 1)::integer;
  return jsonb_build_object(
    'sqlstate', 'ZF013',
    'message', format('model tokens per minute: workspace %s used %s of its %s tokens in the last minute',
                      p_run.workspace_id, v_used, v_limit),
    'detail',  format('scope=workspace cap=model_tokens_per_min workspace_id=%s used=%s limit=%s estimate=%s '
                      'window_s=60 retry_after_s=%s agent_run=%s', p_run.workspace_id, v_used, v_limit, v_est,
                      v_retry, p_run.id),
    'hint',    format('Wait %s s and ask again (the agent loop waits, heartbeating, without spending an attempt), '
                      'or raise model_tokens_per_min with set_workspace_limits.', v_retry),
    'retry_after_s', v_retry);
end
$$;
comment on function pgflight._token_admission(pgflight.agent_runs, bigint, timestamptz) is
  'Internal: check a model call against the workspace''s model_tokens_per_min and add its estimate; '
  'returns null or the ZF013 refusal with retry_after_s.';

-- A recorded model call's tokens (input + output) into its workspace's window (the caller calls it
-- when the workspace has a model_tokens_per_min limit, p_limit): the actual tokens, less the
-- estimate its admission added when p_reserved (the call was admitted for this attempt and iteration).
create or replace function pgflight._settle_tokens(p_run pgflight.agent_runs, p_limit bigint, p_tokens bigint,
                                        p_reserved boolean, p_now timestamptz)
returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_delta bigint := p_tokens - case when p_reserved then pgflight._token_estimate(p_run, p_limit) else 0 end;
begin
  if v_delta = 0 then
    return;
  end if;
  insert into pgflight.engine_locks (scope) values ('model_tokens:' || p_run.workspace_id) on conflict do nothing;
  perform from pgflight.engine_locks l where l.scope = 'model_tokens:' || p_run.workspace_id for update;
  insert into pgflight.model_token_windows as w (workspace_id, bucket, tokens)
  values (p_run.workspace_id, to_timestamp(floor(extract(epoch from p_now) / 5) * 5), v_delta)
  on conflict on constraint model_token_window_is_unique do update set tokens = w.tokens + excluded.tokens;
end
$$;
comment on function pgflight._settle_tokens(pgflight.agent_runs, bigint, bigint, boolean, timestamptz) is
  'Internal: put a recorded call''s model tokens in its workspace''s window (less its admitted estimate).';

-- Admission of model call p_iteration of the agent run p_run (fenced and locked by the caller):
-- releases a reservation of another attempt or iteration, checks the iteration cap, the
-- workspace's model tokens per minute (ZF013 refusal with retry_after_s) and the wall-time and
-- USD caps of every budget that binds the call, reserves p_est_usd (USD) on them and records the
-- reservation on the agent run. A reservation already held for (p_attempt_id, p_iteration) is
-- kept. Returns null when admitted, else the refusal (nothing reserved; the caller raises it with
-- _raise_budget_exceeded or hands it to the client). The admission is made just before the call's
-- request leaves, so the reservation is marked reserved_call_out (see _release_reservation).
-- reserved_attempt_id is kept when a
-- reservation ends (tables/agent_runs_hot): it changes once per attempt, so iterations are HOT.
create or replace function pgflight._reserve(p_run pgflight.agent_runs, p_attempt_id bigint, p_iteration integer,
                                  p_est_usd numeric, p_now timestamptz)
returns jsonb
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_ids bigint[];
  v_refusal jsonb;
  v_tokens_per_min bigint;
begin
  if p_run.reserved_attempt_id = p_attempt_id and p_run.reserved_iteration = p_iteration then
    if not p_run.reserved_call_out then
      update pgflight.agent_runs set reserved_call_out = true where id = p_run.id;
    end if;
    return null;
  end if;
  if p_run.reserved_iteration is not null then
    perform pgflight._move_budget(p_run.reserved_budget_ids, 0, 0, p_run.reserved_usd, false, p_now, 'release');
  end if;
  if p_iteration > p_run.max_iterations then
    v_refusal := pgflight._iteration_refusal(p_run, p_iteration);
  else
    select l.model_tokens_per_min into v_tokens_per_min
      from pgflight.workspace_limits l where l.workspace_id = p_run.workspace_id;
    if v_tokens_per_min is not null then
      v_refusal := pgflight._token_admission(p_run, v_tokens_per_min, p_now);
    end if;
  end if;
  if v_refusal is null then
    v_ids := pgflight._call_budget_ids(p_run, p_now);
    v_refusal := pgflight._move_budget(v_ids, p_est_usd, 0, 0, true, p_now,
                                       format('agent_run=%s iteration=%s', p_run.id, p_iteration));
  end if;
  if v_refusal is null then
    update pgflight.agent_runs
       set reserved_usd = p_est_usd, reserved_attempt_id = p_attempt_id, reserved_iteration = p_iteration,
           reserved_budget_ids = v_ids, reserved_call_out = true, updated_at = p_now
     where id = p_run.id;
  elsif p_run.reserved_iteration is not null then
    update pgflight.agent_runs
       set reserved_usd = 0, reserved_iteration = null, reserved_budget_ids = null, reserved_call_out = false,
           updated_at = p_now
     where id = p_run.id;
  end if;
  return v_refusal;
end
$$;
comment on function pgflight._reserve(pgflight.agent_runs, bigint, integer, numeric, timestamptz) is
  'Internal: admission of a model call (caps and model tokens per minute checked, est USD reserved); '
  'returns null or the refusal.';

commit;
