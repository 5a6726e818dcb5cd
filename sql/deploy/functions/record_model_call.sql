-- Deploy pgflight:functions/record_model_call
-- requires: functions/_agent
begin;
set local role pgflight_owner;

-- Make one model call durable, in one transaction: check the budgets, store each response block as
-- a trace row (iteration p_iteration, seq 0..n-1), store the usage and its USD cost (from
-- model_prices) in costs, settle the budgets and update the agent's totals.
-- Budgets: the iteration cap always. When reserve_budget admitted this (attempt, iteration) the
-- reservation is replaced by the actual cost (the call was paid for; its overshoot over the
-- estimate is the documented bound). Without a reservation the actual cost is admitted here with
-- the same atomic check, and a call that would cross a cap raises ZF007 and stores nothing.
-- Idempotent: a second call for the same (agent run, iteration) stores nothing and returns
-- recorded = false with the totals (a retry after a lost reply).
-- p_blocks: the response's content array (Messages API blocks: text, thinking, redacted_thinking,
-- tool_use); p_usage: the response's usage object; p_model: the model that answered.
-- options: stop_reason (text), retries (transient errors retried before this answer).
-- Errors: ZF007 budget, ZF001, ZF002, ZF003 (fence), 22023 malformed blocks or unknown model price.
create function pgflight.record_model_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint,
                                           p_iteration integer, p_blocks jsonb, p_usage jsonb, p_model text,
                                           p_options jsonb default '{}')
returns table (agent_run_id bigint, iteration integer, usd numeric, recorded boolean, iterations integer,
               tool_calls integer, total_usd numeric)
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_now timestamptz := pgflight._now();
  v_run pgflight.agent_runs;
  v_usd numeric;
  v_ids bigint[];
begin
  if p_blocks is null or jsonb_typeof(p_blocks) <> 'array' then
    raise exception using errcode = '22023', message = 'blocks must be a JSON array',
      hint = 'Pass the response''s content array as returned by the Messages API.';
  end if;
  if p_iteration is null or p_iteration < 1 then
    raise exception using errcode = '22023', message = 'iteration must be >= 1';
  end if;
  v_run := pgflight._agent_fence(p_attempt_id, p_token, p_agent_run_id, 'record_model_call');
  if exists (select 1 from pgflight.costs c where c.agent_run_id = v_run.id and c.iteration = p_iteration) then
    return query select v_run.id, p_iteration, c.usd, false, v_run.iterations, v_run.tool_calls, v_run.usd
      from pgflight.costs c where c.agent_run_id = v_run.id and c.iteration = p_iteration;
    return;
  end if;
  perform pgflight._check_iterations(v_run, p_iteration);
  v_usd := pgflight._price_usd(p_model, coalesce(p_usage, '{}'));

  if v_run.reserved_attempt_id = p_attempt_id and v_run.reserved_iteration = p_iteration then
    -- settle: the reservation becomes the actual cost, on the budgets it was taken on
    perform pgflight._move_budget(v_run.reserved_budget_ids, 0, v_usd, v_run.reserved_usd, false, v_now, 'settle');
  else
    if v_run.reserved_attempt_id is not null then
      perform pgflight._release_reservation(v_run.id);
    end if;
    v_ids := pgflight._call_budget_ids(v_run, v_now);
    perform pgflight._move_budget(v_ids, 0, v_usd, 0, true, v_now,
                                  format('agent_run=%s iteration=%s unreserved', v_run.id, p_iteration));
  end if;

  insert into pgflight.traces (agent_run_id, iteration, seq, role, block_type, tool_use_id, tool_name, content,
                               status, tokens, attempt_id, created_at, updated_at)
  select v_run.id, p_iteration, (b.ord - 1)::integer, 'assistant',
         case b.value ->> 'type' when 'redacted_thinking' then 'thinking' else b.value ->> 'type' end,
         case when b.value ->> 'type' = 'tool_use' then b.value ->> 'id' end,
         case when b.value ->> 'type' = 'tool_use' then b.value ->> 'name' end,
         b.value, 'completed', ceil(length(b.value::text) / 4.0)::integer, p_attempt_id, v_now, v_now
    from jsonb_array_elements(p_blocks) with ordinality as b(value, ord)
  on conflict on constraint block_is_unique do nothing;

  insert into pgflight.costs (agent_run_id, iteration, step_id, run_id, workspace_id, model, input_tokens,
                              output_tokens, cache_creation_tokens, cache_read_tokens, usd, stop_reason,
                              retries, attempt_id, at)
  values (v_run.id, p_iteration, v_run.step_id, v_run.run_id, v_run.workspace_id, p_model,
          coalesce((p_usage ->> 'input_tokens')::bigint, 0), coalesce((p_usage ->> 'output_tokens')::bigint, 0),
          coalesce((p_usage ->> 'cache_creation_input_tokens')::bigint, 0),
          coalesce((p_usage ->> 'cache_read_input_tokens')::bigint, 0), v_usd,
          pgflight._opt_text(p_options, 'stop_reason', null),
          pgflight._opt_num(p_options, 'retries', 0)::integer, p_attempt_id, v_now);

  update pgflight.agent_runs r
     set iterations = greatest(r.iterations, p_iteration),
         input_tokens = r.input_tokens + coalesce((p_usage ->> 'input_tokens')::bigint, 0),
         output_tokens = r.output_tokens + coalesce((p_usage ->> 'output_tokens')::bigint, 0),
         cache_creation_tokens = r.cache_creation_tokens + coalesce((p_usage ->> 'cache_creation_input_tokens')::bigint, 0),
         cache_read_tokens = r.cache_read_tokens + coalesce((p_usage ->> 'cache_read_input_tokens')::bigint, 0),
         usd = r.usd + v_usd,
         reserved_usd = 0, reserved_attempt_id = null, reserved_iteration = null, reserved_budget_ids = null,
         updated_at = v_now
   where r.id = v_run.id
  returning * into v_run;
  return query select v_run.id, p_iteration, v_usd, true, v_run.iterations, v_run.tool_calls, v_run.usd;
end
$$;
comment on function pgflight.record_model_call(bigint, bigint, bigint, integer, jsonb, jsonb, text, jsonb) is
  'Store a model response (traces), its usage and USD cost (costs), settle budgets and totals in one '
  'transaction; returns (agent_run_id, iteration, usd, recorded, totals). Errors: ZF007, ZF001, ZF002, ZF003, 22023.';
grant execute on function pgflight.record_model_call(bigint, bigint, bigint, integer, jsonb, jsonb, text, jsonb)
  to pgflight_worker;

commit;
