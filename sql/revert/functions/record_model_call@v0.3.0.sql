-- Revert pgflight:functions/record_model_call@v0.3.0: restores the previous definition, deploy/functions/record_model_call@v0.2.0.sql (written by scripts/gen_sql_scripts.py)
begin;
set local role pgflight_owner;

-- Make one model call durable, in one transaction: store each response block as a trace row
-- (iteration p_iteration, seq 0..n-1), store the usage and its USD cost (from model_prices) in
-- costs, settle the budgets and update the agent's totals; with option mark_tools, also mark the
-- response's tool calls in flight (the tool_result rows, seq 1000 + the tool_use's seq, status
-- in_flight), so the client can run them at once: an iteration that asks for tools costs this
-- transaction and one complete_tool_calls.
-- Budgets: when reserve_budget (or complete_tool_calls) admitted this (attempt, iteration), the
-- reservation is replaced by the actual cost (the call was paid for; its overshoot over the
-- estimate is the documented bound). Without a reservation the iteration cap and the actual cost
-- are admitted here with the same atomic check, and a call that would cross a cap raises ZF007 and
-- stores nothing.
-- Tool calls: marking counts against max_tool_calls; the calls past the cap are left unmarked
-- (the call itself is still recorded) and mark_tool_call refuses them with ZF007.
-- Idempotent: a second call for the same (agent run, iteration) stores nothing and returns
-- recorded = false with the totals (a retry after a lost reply).
-- p_blocks: the response's content array (Messages API blocks: text, thinking, redacted_thinking,
-- tool_use); p_usage: the response's usage object; p_model: the model that answered.
-- options: stop_reason (text), retries (transient errors retried before this answer), mark_tools
-- (boolean, default false).
-- Returns marked: the tool_use ids now in flight, in block order (empty without mark_tools).
-- Errors: ZF007 budget, ZF001, ZF002, ZF003 (fence), 22023 malformed blocks or unknown model price.
create or replace function pgflight.record_model_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint,
                                           p_iteration integer, p_blocks jsonb, p_usage jsonb, p_model text,
                                           p_options jsonb default '{}')
returns table (agent_run_id bigint, iteration integer, usd numeric, recorded boolean, iterations integer,
               tool_calls integer, total_usd numeric, marked text[])
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_now timestamptz := pgflight._now();
  v_run pgflight.agent_runs;
  v_usd numeric;
  v_in bigint := coalesce((p_usage ->> 'input_tokens')::bigint, 0);
  v_out bigint := coalesce((p_usage ->> 'output_tokens')::bigint, 0);
  v_cw bigint := coalesce((p_usage ->> 'cache_creation_input_tokens')::bigint, 0);
  v_cr bigint := coalesce((p_usage ->> 'cache_read_input_tokens')::bigint, 0);
  v_mark boolean;
  v_free integer;
  v_marked text[];
  v_refusal jsonb;
begin
  if p_blocks is null or jsonb_typeof(p_blocks) <> 'array' then
    raise exception using errcode = '22023', message = 'blocks must be a JSON array',
      hint = 'Pass the response''s content array as returned by the Messages API.';
  end if;
  if p_iteration is null or p_iteration < 1 then
    raise exception using errcode = '22023', message = 'iteration must be >= 1';
  end if;
  if p_options ? 'mark_tools' and jsonb_typeof(p_options -> 'mark_tools') not in ('boolean', 'null') then
    raise exception using errcode = '22023', message = 'option mark_tools must be a boolean';
  end if;
  v_mark := coalesce((p_options ->> 'mark_tools')::boolean, false);
  v_run := pgflight._agent_fence(p_attempt_id, p_token, p_agent_run_id, 'record_model_call');
  v_usd := pgflight._price_usd(p_model, coalesce(p_usage, '{}'));

  -- the costs row is the iteration's claim: a repeat stores nothing
  insert into pgflight.costs (agent_run_id, iteration, step_id, run_id, workspace_id, model, input_tokens,
                              output_tokens, cache_creation_tokens, cache_read_tokens, usd, stop_reason,
                              retries, attempt_id, at)
  values (v_run.id, p_iteration, v_run.step_id, v_run.run_id, v_run.workspace_id, p_model, v_in, v_out, v_cw, v_cr,
          v_usd, pgflight._opt_text(p_options, 'stop_reason', null),
          pgflight._opt_num(p_options, 'retries', 0)::integer, p_attempt_id, v_now)
  on conflict on constraint one_call_per_iteration do nothing;
  if not found then
    return query select v_run.id, p_iteration, c.usd, false, v_run.iterations, v_run.tool_calls, v_run.usd,
                        '{}'::text[]
      from pgflight.costs c where c.agent_run_id = v_run.id and c.iteration = p_iteration;
    return;
  end if;

  if v_run.reserved_attempt_id = p_attempt_id and v_run.reserved_iteration = p_iteration then
    -- settle: the reservation becomes the actual cost, on the budgets it was taken on (the caps
    -- were checked when it was admitted)
    perform pgflight._move_budget(v_run.reserved_budget_ids, 0, v_usd, v_run.reserved_usd, false, v_now, 'settle');
  else
    if v_run.reserved_attempt_id is not null then
      perform pgflight._move_budget(v_run.reserved_budget_ids, 0, 0, v_run.reserved_usd, false, v_now, 'release');
    end if;
    v_refusal := coalesce(pgflight._iteration_refusal(v_run, p_iteration),
                          pgflight._move_budget(pgflight._call_budget_ids(v_run, v_now), 0, v_usd, 0, true, v_now,
                                                format('agent_run=%s iteration=%s unreserved', v_run.id, p_iteration)));
    if v_refusal is not null then
      perform pgflight._raise_budget_exceeded(v_refusal);
    end if;
  end if;

  -- the response blocks and, with mark_tools, the in-flight rows of as many tool calls as the cap allows
  v_free := case when v_mark then greatest(v_run.max_tool_calls - v_run.tool_calls, 0) else 0 end;
  with b as (
    select (e.ord - 1)::integer as seq, e.v,
           case e.v ->> 'type' when 'redacted_thinking' then 'thinking' else e.v ->> 'type' end as block_type
      from jsonb_array_elements(p_blocks) with ordinality as e(v, ord)
  ), ins as (
    insert into pgflight.traces (agent_run_id, iteration, seq, role, block_type, tool_use_id, tool_name, content,
                                 status, tokens, attempt_id, created_at, updated_at)
    select v_run.id, p_iteration, b.seq, 'assistant', b.block_type,
           case when b.block_type = 'tool_use' then b.v ->> 'id' end,
           case when b.block_type = 'tool_use' then b.v ->> 'name' end,
           b.v, 'completed', ceil(length(b.v::text) / 4.0)::integer, p_attempt_id, v_now, v_now
      from b
    union all
    select v_run.id, p_iteration, 1000 + u.seq, 'user', 'tool_result', u.v ->> 'id', u.v ->> 'name', null,
           'in_flight', null, p_attempt_id, v_now, v_now
      from (select b.seq, b.v, row_number() over (order by b.seq) as n from b where b.block_type = 'tool_use') u
     where u.n <= v_free
    on conflict on constraint block_is_unique do nothing
    returning seq, tool_use_id, status
  )
  select coalesce(array_agg(ins.tool_use_id order by ins.seq) filter (where ins.status = 'in_flight'), '{}')
    into v_marked from ins;

  update pgflight.agent_runs r
     set iterations = greatest(r.iterations, p_iteration),
         tool_calls = r.tool_calls + cardinality(v_marked),
         input_tokens = r.input_tokens + v_in,
         output_tokens = r.output_tokens + v_out,
         cache_creation_tokens = r.cache_creation_tokens + v_cw,
         cache_read_tokens = r.cache_read_tokens + v_cr,
         usd = r.usd + v_usd,
         reserved_usd = 0, reserved_attempt_id = null, reserved_iteration = null, reserved_budget_ids = null,
         updated_at = v_now
   where r.id = v_run.id
  returning * into v_run;
  return query select v_run.id, p_iteration, v_usd, true, v_run.iterations, v_run.tool_calls, v_run.usd, v_marked;
end
$$;
comment on function pgflight.record_model_call(bigint, bigint, bigint, integer, jsonb, jsonb, text, jsonb) is
  'Store a model response (traces), its usage and USD cost (costs), settle budgets and totals, and with '
  'mark_tools mark its tool calls in flight, in one transaction; returns (agent_run_id, iteration, usd, '
  'recorded, totals, marked). Errors: ZF007, ZF001, ZF002, ZF003, 22023.';
grant execute on function pgflight.record_model_call(bigint, bigint, bigint, integer, jsonb, jsonb, text, jsonb) to pgflight_worker;

commit;
