-- Deploy pgflight:functions/record_model_call

begin;

set local role pgflight_owner;

CREATE OR REPLACE FUNCTION pgflight.record_model_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_blocks jsonb, p_usage jsonb, p_model text, p_options jsonb DEFAULT '{}'::jsonb, p_next_est_usd numeric DEFAULT NULL::numeric) RETURNS TABLE(agent_run_id bigint, iteration integer, usd numeric, recorded boolean, iterations integer, tool_calls integer, total_usd numeric, marked text[], next_reserved boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $_$
#variable_conflict use_column
declare
  v_now timestamptz := pgflight._now();
  v_run pgflight.agent_runs;
  v_usd numeric;
  v_in bigint;
  v_out bigint;
  v_cw bigint;
  v_cr bigint;
  v_cw_1h bigint := 0;  -- of v_cw, the one-hour cache writes
  v_searches bigint := 0;  -- server-side web searches
  v_tokens_per_min bigint;
  v_mark boolean;
  v_run_workspace bigint;  -- with mark_tools: the workspace whose tool policies apply
  v_free integer;
  v_marked text[];
  v_reserved boolean;
  v_cap bigint;
  v_max_blocks integer;
  v_depth integer;  -- settings.max_json_depth
  v_hit boolean;  -- the fence statement found the attempt and the agent run
  v_next_ids bigint[];
  v_want boolean;  -- the next call is to be admitted here
  v_next boolean;  -- the next call was admitted here
  v_f record;  -- the fence's row: the agent run, the price, today's workspace budget, the token limit
  v_price pgflight.model_prices;
begin
  -- Arguments. Every option checked against its spec first (docs/options.md): 22023 naming the
  -- key; the agent loop's own options pass without the spec lookup (_model_call_options_ok).
  if p_options is not null and p_options <> '{}' and not pgflight._model_call_options_ok(p_options) then
    p_options := pgflight._check_options('record_model_call', p_options);
  end if;
  -- the usage: four token counts, integers from 0 to 1e10 (22023 naming the key otherwise); a usage
  -- of well-formed counts (_usage_counts_ok) is read directly, anything else goes through _opt_int,
  -- which raises.
  if pgflight._usage_counts_ok(p_usage) then
    v_in := coalesce((p_usage ->> 'input_tokens')::numeric, 0);
    v_out := coalesce((p_usage ->> 'output_tokens')::numeric, 0);
    v_cw := coalesce((p_usage ->> 'cache_creation_input_tokens')::numeric, 0);
    v_cr := coalesce((p_usage ->> 'cache_read_input_tokens')::numeric, 0);
  else
    v_in := pgflight._opt_int(p_usage, 'input_tokens', 0, 0, 10000000000, 'usage');
    v_out := pgflight._opt_int(p_usage, 'output_tokens', 0, 0, 10000000000, 'usage');
    v_cw := pgflight._opt_int(p_usage, 'cache_creation_input_tokens', 0, 0, 10000000000, 'usage');
    v_cr := pgflight._opt_int(p_usage, 'cache_read_input_tokens', 0, 0, 10000000000, 'usage');
  end if;
  -- one-hour cache writes and web searches, priced apart (_price_of); read only when present
  if p_usage ? 'cache_creation' or p_usage ? 'server_tool_use' then
    select x.cw_1h, x.searches into v_cw_1h, v_searches from pgflight._usage_extras(p_usage) x;
  end if;
  if p_blocks is null or jsonb_typeof(p_blocks) <> 'array' then
    raise exception using errcode = '22023', message = 'blocks must be a JSON array',
      hint = 'Pass the response''s content array as returned by the Messages API.';
  end if;
  if p_iteration is null or p_iteration < 1 then
    raise exception using errcode = '22023', message = 'iteration must be >= 1';
  end if;
  -- bounded like reserve_budget's est_usd; _check_arg raises
  if p_next_est_usd is not null and not (p_next_est_usd >= 0 and p_next_est_usd <= 1000000) then
    perform pgflight._check_arg('next_est_usd', p_next_est_usd, 0, 1000000);
  end if;
  if p_options ? 'mark_tools' and jsonb_typeof(p_options -> 'mark_tools') not in ('boolean', 'null') then
    raise exception using errcode = '22023', message = 'option mark_tools must be a boolean';
  end if;
  v_mark := coalesce((p_options ->> 'mark_tools')::boolean, false);
  -- the fence of _agent_fence (attempt FOR SHARE, agent run FOR UPDATE, the holder's login) and, in
  -- the same statement, what the call needs of other tables: the price (longest model prefix), the
  -- workspace's daily cap with today's (UTC) budget row, its model tokens per minute, the
  -- settings row (its caps: result bytes, blocks per iteration, JSON depth) and the attempt's
  -- workspace (whose tool policies apply). Subqueries, not joins: each is planned on its own, so
  -- a replan (after an ANALYZE) searches no join order.
  select r as run, a.workspace_id as attempt_workspace,
         (select s from pgflight.settings s) as settings,
         (select p from pgflight.model_prices p
           where left(p_model, length(p.model)) = p.model order by length(p.model) desc limit 1) as price,
         (select w.daily_usd_cap from pgflight.workspaces w where w.id = r.workspace_id) as daily_usd_cap,
         (select d from pgflight.budgets d
           where d.scope = 'workspace_day' and d.workspace_id = r.workspace_id
             and d.day = (v_now at time zone 'UTC')::date) as day,
         (select l.model_tokens_per_min from pgflight.workspace_limits l
           where l.workspace_id = r.workspace_id) as model_tokens_per_min
    into v_f
    from pgflight.step_attempts a
    join pgflight.agent_runs r on r.step_id = a.step_id
   -- the status test written IS TRUE, so no plan reads the attempt through the partial index of
   -- leased attempts (all of them) instead of its primary key (a choice seen on small tables)
   where a.id = p_attempt_id and a.fencing_token = p_token and (a.status in ('claimed', 'running')) is true
     and r.id = p_agent_run_id
     and exists (select from pgflight.workers k where k.id = a.worker_id and k.login = session_user)
     for share of a for update of r;
  v_hit := found;
  -- The response's blocks are capped like a result (ZF005, nothing written); on a fence
  -- miss checked before _agent_fence reports it, as when the cap was read before the fence
  if v_hit then
    v_cap := (v_f.settings).max_result_bytes;
    v_max_blocks := (v_f.settings).max_trace_blocks_per_iteration;
    v_depth := (v_f.settings).max_json_depth;
  else
    select s.max_result_bytes, s.max_trace_blocks_per_iteration, s.max_json_depth into v_cap, v_max_blocks, v_depth
      from pgflight.settings s;
  end if;
  -- a response of more blocks than an iteration may hold (settings.max_trace_blocks_per_iteration)
  if jsonb_array_length(p_blocks) > v_max_blocks then
    perform pgflight._require_cap('max_trace_blocks_per_iteration', v_max_blocks, jsonb_array_length(p_blocks),
                                  'model response blocks (count)');
  end if;
  if octet_length(p_blocks::text) > v_cap then  -- _require_cap raises (called only then)
    perform pgflight._require_cap('max_result_bytes', v_cap, octet_length(p_blocks::text),
                                  'model response blocks (bytes)');
  end if;
  -- the depth cap (ZF005): _require_json_depth's own first test here, so a value too small to nest
  -- deeper than the cap costs no call (each, with its SET clause and its read of the settings,
  -- cost more than the test); a larger one goes to the helper, a null one to neither
  if not (pg_column_size(p_blocks) < 8 * (v_depth + 1) and pg_column_compression(p_blocks) is null) then
    perform pgflight._require_json_depth(p_blocks, 'model response blocks');
  end if;
  if not (pg_column_size(p_usage) < 8 * (v_depth + 1) and pg_column_compression(p_usage) is null) then
    perform pgflight._require_json_depth(p_usage, 'usage');
  end if;
  if not v_hit then  -- _agent_fence raises ZF001 / ZF002 / ZF003 / ZF012
    v_run := pgflight._agent_fence(p_attempt_id, p_token, p_agent_run_id, 'record_model_call');
    -- (found on a second look: the price and the day's budget go through their helpers)
    select r as run, null::pgflight.model_prices as price, w.daily_usd_cap, null::pgflight.budgets as day,
           l.model_tokens_per_min
      into v_f
      from pgflight.agent_runs r
      join pgflight.workspaces w on w.id = r.workspace_id
      left join pgflight.workspace_limits l on l.workspace_id = r.workspace_id
     where r.id = v_run.id;
  end if;
  v_run := v_f.run;
  v_price := v_f.price;
  if v_price.model is null then  -- _price_usd raises 22023 when no price matches
    v_usd := pgflight._price_usd(p_model, coalesce(p_usage, '{}'));
  else  -- _price_usd's sum, of the counts read above (the same values)
    v_usd := pgflight._price_of(v_price, v_in, v_out, v_cw, v_cr, v_cw_1h, v_searches);
  end if;

  -- the costs row is the iteration's claim: a repeat stores nothing
  insert into pgflight.costs (agent_run_id, iteration, step_id, run_id, workspace_id, model, input_tokens,
                              output_tokens, cache_creation_tokens, cache_read_tokens, usd, stop_reason,
                              retries, attempt_id, at, cache_creation_1h_tokens, web_search_requests)
  values (v_run.id, p_iteration, v_run.step_id, v_run.run_id, v_run.workspace_id, p_model, v_in, v_out, v_cw, v_cr,
          v_usd, p_options ->> 'stop_reason',  -- both checked above
          coalesce((p_options ->> 'retries')::numeric, 0)::integer, p_attempt_id, v_now, v_cw_1h, v_searches)
  -- No conflict target: with one, every insert into the partitioned table maps the
  -- arbiter to the partition's index by reading pg_inherits for each of its five indexes. Without
  -- it every unique index arbitrates, and only one_call_per_iteration can conflict here: the
  -- primary key (id, agent_run_id) takes a fresh id, one_orphan_per_attempt holds lease_lost rows
  -- only (tables/costs_lease_lost).
  on conflict do nothing;
  if not found then
    return query select v_run.id, p_iteration, c.usd, false, v_run.iterations, v_run.tool_calls, v_run.usd,
                        '{}'::text[], false
      from pgflight.costs c where c.agent_run_id = v_run.id and c.iteration = p_iteration and not c.lease_lost;
    return;
  end if;

  v_reserved := v_run.reserved_attempt_id = p_attempt_id and v_run.reserved_iteration = p_iteration;
  v_tokens_per_min := v_f.model_tokens_per_min;
  -- the next call is admitted early only when no tokens-per-minute limit applies and it is within
  -- max_iterations (otherwise complete_tool_calls admits it, or refuses it, as before)
  v_want := p_next_est_usd is not null and v_tokens_per_min is null and p_iteration < v_run.max_iterations;
  if v_want then
    -- _call_budget_ids' common case inline: the tree's budgets and today's workspace row, when it
    -- exists at the current cap (else the helper creates it or gives it the cap)
    if v_f.daily_usd_cap is null then
      v_next_ids := v_run.budget_ids;
    elsif (v_f.day).id is not null and (v_f.day).limit_usd = v_f.daily_usd_cap then
      v_next_ids := v_run.budget_ids || (v_f.day).id;
    else
      v_next_ids := pgflight._call_budget_ids(v_run, v_now);
    end if;
  end if;
  -- the budgets: this call settled (ZF007 when unreserved and a cap refuses it), the next admitted
  v_next := pgflight._settle_model_call(v_run, p_iteration, v_usd, v_reserved, v_want, p_next_est_usd, v_next_ids, v_now);

  -- the workspace's model tokens per minute: the call's tokens replace its admitted estimate
  if v_tokens_per_min is not null then
    perform pgflight._settle_tokens(v_run, v_tokens_per_min, v_in + v_out, v_reserved, v_now);
  end if;

  -- the response blocks and, with mark_tools, the in-flight rows of as many tool calls as the cap
  -- allows; then the agent's totals, with as many more tool calls as were marked. One statement
  -- (the totals' update was a statement of its own; each costs an executor start-up).
  v_free := case when v_mark then greatest(v_run.max_tool_calls - v_run.tool_calls, 0) else 0 end;
  if v_free > 0 then
    if v_hit then
      v_run_workspace := v_f.attempt_workspace;
    else
      select a.workspace_id into v_run_workspace from pgflight.step_attempts a where a.id = p_attempt_id;
    end if;
  end if;
  with b as (
    -- the block's own type, so a type this code does not know (server_tool_use,
    -- web_search_tool_result, one added later) is stored and sent back as it came; a name the
    -- traces cannot hold (absent, not lower-case letters, digits and underscores, longer than 64)
    -- or one that belongs to the client's
    -- side of the conversation is labelled 'unknown' (the content is kept whole either way)
    select (e.ord - 1)::integer as seq, e.v,
           case when e.v ->> 'type' = 'redacted_thinking' then 'thinking'
                when e.v ->> 'type' = any ('{tool_result,api_error}'::text[])
                     or (e.v ->> 'type' ~ '^[a-z][a-z0-9_]{0,63}$') is not true then 'unknown'
                else e.v ->> 'type' end as block_type
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
    select v_run.id, p_iteration, pgflight._seq_band_tool_results() + u.seq, 'user', 'tool_result', u.v ->> 'id', u.v ->> 'name', null,
           'in_flight', null, p_attempt_id, v_now, v_now
      from (select b.seq, b.v, row_number() over (order by b.seq) as n from b where b.block_type = 'tool_use') u
     where u.n <= v_free
       -- a call a tool policy of the workspace may hold back (deny, require_approval) is left
       -- for mark_tool_call, which applies the policy before it marks the call
       and not exists (select from pgflight.tool_policies p
                         where p.workspace_id = v_run_workspace and p.tool_name in (u.v ->> 'name', '*')
                           and p.action <> 'allow')
    on conflict on constraint block_is_unique do nothing
    returning seq, tool_use_id, status
  ), m as (  -- the tool_use ids now in flight, in block order
    select coalesce(array_agg(ins.tool_use_id order by ins.seq) filter (where ins.status = 'in_flight'), '{}') as marked
      from ins
  ), up as (
    update pgflight.agent_runs r
       set iterations = greatest(r.iterations, p_iteration),
           tool_calls = r.tool_calls + (select cardinality(m.marked) from m),
           input_tokens = r.input_tokens + v_in,
           output_tokens = r.output_tokens + v_out,
           cache_creation_tokens = r.cache_creation_tokens + v_cw,
           cache_read_tokens = r.cache_read_tokens + v_cr,
           usd = r.usd + v_usd,
           -- the next call's reservation, or none; the attempt id stays when it does not change (HOT)
           reserved_usd = case when v_next then p_next_est_usd else 0 end,
           reserved_attempt_id = case when v_next then p_attempt_id else r.reserved_attempt_id end,
           reserved_iteration = case when v_next then p_iteration + 1 end,
           reserved_budget_ids = case when v_next then v_next_ids end,
           reserved_call_out = false,  -- this call is recorded; the next one's reservation is ahead of it
           updated_at = v_now
     where r.id = v_run.id
    returning r.iterations, r.tool_calls, r.usd
  )
  select m.marked, up.iterations, up.tool_calls, up.usd into v_marked, iterations, tool_calls, total_usd
    from m, up;
  agent_run_id := v_run.id;
  iteration := p_iteration;
  usd := v_usd;
  recorded := true;
  marked := v_marked;
  next_reserved := v_next;
  return next;
end
$_$;

COMMENT ON FUNCTION pgflight.record_model_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_blocks jsonb, p_usage jsonb, p_model text, p_options jsonb, p_next_est_usd numeric) IS 'Store a model response (traces), its usage and USD cost (costs), settle budgets and totals, and with mark_tools mark its tool calls in flight, in one transaction; returns (agent_run_id, iteration, usd, recorded, totals, marked, next_reserved); with p_next_est_usd it also admits the next call (reserving that many USD). Options (docs/options.md): stop_reason, retries, mark_tools. Errors: ZF007, ZF001, ZF002, ZF003, 22023.';

REVOKE ALL ON FUNCTION pgflight.record_model_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_blocks jsonb, p_usage jsonb, p_model text, p_options jsonb, p_next_est_usd numeric) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.record_model_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_blocks jsonb, p_usage jsonb, p_model text, p_options jsonb, p_next_est_usd numeric) TO pgflight_worker;

commit;
