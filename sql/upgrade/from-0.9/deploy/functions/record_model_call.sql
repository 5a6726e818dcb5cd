-- Deploy pgflight:functions/record_model_call
begin;
set local role pgflight_owner;

-- record_model_call reads in sections; three have a name of their own: the two checks of its
-- arguments' common shapes (inlined by the planner: SQL, no SET clause, fully qualified names, as
-- _now()) and the budgets' settlement. None is granted to a lane.

-- Whether record_model_call's options are the agent loop's own (only the keys stop_reason,
-- retries, mark_tools, well-typed, in range, stop_reason at most 256 characters), so they pass
-- without the option spec's lookup (which cost more than the rest of the call); false sends them to
-- _check_options, which raises 22023 naming the key. One JSON path: an expression of some twenty
-- function calls was initialised anew in every transaction. Anything the path cannot evaluate
-- (silent) is not true, so it takes the checked way.
create or replace function pgflight._model_call_options_ok(p_options jsonb)
returns boolean
language sql immutable
as $$
  select coalesce(pg_catalog.jsonb_path_match(p_options, '$.type() == "object"
                 && !exists($.keyvalue() ? (@.key != "stop_reason" && @.key != "retries" && @.key != "mark_tools"))
                 && (!exists($.stop_reason) || $.stop_reason.type() == "null" || $.stop_reason.type() == "string")
                 && (!exists($.retries) || $.retries.type() == "null"
                     || ($.retries.type() == "number" && $.retries >= 0 && $.retries <= 1000000
                         && $.retries.floor() == $.retries))
                 && (!exists($.mark_tools) || $.mark_tools.type() == "null" || $.mark_tools.type() == "boolean")',
                                              silent => true), false)
         and coalesce(pg_catalog.length(p_options ->> 'stop_reason') <= 256, true)
$$;
comment on function pgflight._model_call_options_ok(jsonb) is
  'Internal (record_model_call): whether the options are the agent loop''s well-formed stop_reason, retries, '
  'mark_tools (true) or need _check_options (false). Inlined: no SET clause.';

-- Whether a usage object's four token counts (input_tokens, output_tokens,
-- cache_creation_input_tokens, cache_read_input_tokens) are each absent, null or an integer from
-- 0 to 1e10, so record_model_call reads them directly; false sends them through _opt_int, which
-- raises 22023 naming the key. One JSON path (the expression it replaced called some sixty
-- functions, each checked for EXECUTE and initialised anew in every transaction); anything it
-- cannot evaluate (silent) is not true.
create or replace function pgflight._usage_counts_ok(p_usage jsonb)
returns boolean
language sql immutable
as $$
  select pg_catalog.jsonb_path_match(p_usage, '$.type() == "object"
                             && (!exists($.input_tokens) || $.input_tokens.type() == "null"
                                 || ($.input_tokens.type() == "number" && $.input_tokens >= 0 && $.input_tokens <= 10000000000
                                     && $.input_tokens.floor() == $.input_tokens))
                             && (!exists($.output_tokens) || $.output_tokens.type() == "null"
                                 || ($.output_tokens.type() == "number" && $.output_tokens >= 0 && $.output_tokens <= 10000000000
                                     && $.output_tokens.floor() == $.output_tokens))
                             && (!exists($.cache_creation_input_tokens) || $.cache_creation_input_tokens.type() == "null"
                                 || ($.cache_creation_input_tokens.type() == "number" && $.cache_creation_input_tokens >= 0 && $.cache_creation_input_tokens <= 10000000000
                                     && $.cache_creation_input_tokens.floor() == $.cache_creation_input_tokens))
                             && (!exists($.cache_read_input_tokens) || $.cache_read_input_tokens.type() == "null"
                                 || ($.cache_read_input_tokens.type() == "number" && $.cache_read_input_tokens >= 0 && $.cache_read_input_tokens <= 10000000000
                                     && $.cache_read_input_tokens.floor() == $.cache_read_input_tokens))', silent => true)
$$;
comment on function pgflight._usage_counts_ok(jsonb) is
  'Internal (record_model_call): whether usage''s four token counts are absent, null or integers 0 .. 1e10. '
  'Inlined: no SET clause.';

-- The budgets of a recorded model call (record_model_call, after its costs row is claimed): the
-- call of p_usd settled and, when p_want, the next call (iteration p_iteration + 1, p_next_est_usd
-- USD on the budgets p_next_ids) admitted. Returns whether the next call was admitted.
-- - Reserved on the budgets the next call needs (or no next call wanted): one move, _move_budget's
--   two statements in one: the rows locked in id order (the materialised CTE's FOR UPDATE locks
--   every row, no outer qual is pushed into it), none moved if one refuses; the reservation
--   becomes the actual cost (its caps were checked when it was admitted) and the next call's is
--   taken, checked as an admission (spent + this cost + the next reservation within every cap,
--   every wall-time cap unexpired). Refused, _move_budget decides, and the call is settled alone.
-- - Reserved otherwise: settled alone (_move_budget 'settle').
-- - Unreserved: a stale reservation released, the iteration cap and the cost admitted together;
--   a refusal raises ZF007 (the caller's transaction stores nothing).
-- - Then the next call's admission on its own when it was not made above.
-- No SET clause: it runs with record_model_call's settings (search_path, generic plans, no
-- sequential scans); a SET clause would save and restore them at every call.
create or replace function pgflight._settle_model_call(p_run pgflight.agent_runs, p_iteration integer, p_usd numeric,
                                                        p_reserved boolean, p_want boolean, p_next_est_usd numeric,
                                                        p_next_ids bigint[], p_now timestamptz)
returns boolean
language plpgsql volatile
as $$
declare
  v_settled boolean := false;
  v_next boolean := false;
  v_want boolean := p_want;
  v_ids bigint[];
  v_reserve numeric;
  v_refusal jsonb;
begin
  if p_reserved and (not v_want or p_next_ids is not distinct from p_run.reserved_budget_ids) then
    v_ids := p_run.reserved_budget_ids;
    v_reserve := case when v_want then p_next_est_usd else 0 end;
    if coalesce(pg_catalog.cardinality(v_ids), 0) = 0 then
      v_settled := true;
    else
      with locked as materialized (
        select b.id,
               v_want and ((b.max_wall_s is not null and p_now > b.started_at + pg_catalog.make_interval(secs => b.max_wall_s))
                           or (b.limit_usd is not null
                               and b.spent_usd + b.reserved_usd - p_run.reserved_usd + v_reserve + p_usd > b.limit_usd))
                 as refuses
          from pgflight.budgets b where b.id = any (v_ids) order by b.id for update
      )
      update pgflight.budgets b
         set reserved_usd = greatest(b.reserved_usd + v_reserve - p_run.reserved_usd, 0),
             spent_usd = b.spent_usd + p_usd
       where b.id = any (v_ids) and not exists (select from locked x where x.refuses);
      v_settled := found;
    end if;
    if not v_settled and v_want then
      -- refused (or none of the rows is left): _move_budget decides and moves; refused, the call
      -- is settled alone below and the next one not asked again
      v_settled := pgflight._move_budget(v_ids, v_reserve, p_usd, p_run.reserved_usd, true, p_now,
                                         pg_catalog.format('agent_run=%s iteration=%s', p_run.id, p_iteration + 1)) is null;
    end if;
    v_next := v_settled and v_want;
    v_settled := v_settled or not v_want;  -- a settlement alone that found no row moved nothing
    v_want := false;
  end if;
  if v_settled then
    null;
  elsif p_reserved then
    perform pgflight._move_budget(p_run.reserved_budget_ids, 0, p_usd, p_run.reserved_usd, false, p_now, 'settle');
  else
    if p_run.reserved_iteration is not null then
      perform pgflight._move_budget(p_run.reserved_budget_ids, 0, 0, p_run.reserved_usd, false, p_now, 'release');
    end if;
    v_refusal := coalesce(pgflight._iteration_refusal(p_run, p_iteration),
                          pgflight._move_budget(pgflight._call_budget_ids(p_run, p_now), 0, p_usd, 0, true, p_now,
                                                pg_catalog.format('agent_run=%s iteration=%s unreserved', p_run.id, p_iteration)));
    if v_refusal is not null then
      perform pgflight._raise_budget_exceeded(v_refusal);
    end if;
  end if;
  if v_want then
    -- the next call's admission on its own (this call was not reserved, or on other budgets)
    v_next := pgflight._move_budget(p_next_ids, p_next_est_usd, 0, 0, true, p_now,
                                    pg_catalog.format('agent_run=%s iteration=%s', p_run.id, p_iteration + 1)) is null;
  end if;
  return v_next;
end
$$;
comment on function pgflight._settle_model_call(pgflight.agent_runs, integer, numeric, boolean, boolean, numeric, bigint[], timestamptz) is
  'Internal (record_model_call): settle a recorded call''s cost on its budgets and admit the next call; '
  'returns whether the next call was admitted. ZF007 when an unreserved call crosses a cap.';

-- Make one model call durable, in one transaction: store each response block as a trace row
-- (iteration p_iteration, seq 0..n-1), store the usage and its USD cost (from model_prices) in
-- costs, settle the budgets and update the agent's totals; with option mark_tools, also mark the
-- response's tool calls in flight (the tool_result rows, seq _seq_band_tool_results() + the tool_use's seq, status
-- in_flight), so the client can run them at once: an iteration that asks for tools costs this
-- transaction and one complete_tool_calls.
-- Model tokens per minute (workspace_limits.model_tokens_per_min): the call's input + output tokens
-- go into the workspace's window, replacing the estimate its admission added; a call is never
-- refused for tokens here (it was made; the check is the admission's).
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
-- tool_use, and any other type, e.g. server_tool_use or web_search_tool_result, stored under its
-- own name and kept exactly as received); p_usage: the response's usage object (priced by
-- _price_of: one-hour cache writes, usage.cache_creation.ephemeral_1h_input_tokens, at their own
-- rate; server-side web searches, usage.server_tool_use.web_search_requests, per search); p_model:
-- the model that answered.
-- options: stop_reason (text), retries (transient errors retried before this answer), mark_tools
-- (boolean, default false).
-- p_next_est_usd: also admit the next model call (iteration p_iteration + 1) and reserve
-- this many USD for it, in this transaction, after settling this call, with the checks of
-- reserve_budget (iteration cap, wall-time and USD caps of every budget that binds it): the client
-- then stores the tool results with complete_tool_calls(next_iteration), which keeps the
-- reservation (checking the wall-time caps again) instead of making a second admission, so an
-- iteration moves the budgets once. Settling and reserving are one move when the call was
-- reserved on the same budgets. Nothing is reserved early, and the result says so
-- (next_reserved = false), when the next call would pass max_iterations, when the workspace has a
-- model tokens per minute limit (its ZF013 stays with the admission the loop waits out) or when a cap
-- refuses it: the call is still recorded, and complete_tool_calls(next_iteration) makes the
-- ordinary admission, raising the refusal there.
-- A call that a tool policy of the workspace may hold back (deny or require_approval, for that tool
-- or '*') is not marked here: mark_tool_call applies the policy to it (docs/waiting.md#tool-policies).
-- Returns marked: the tool_use ids now in flight, in block order (empty without mark_tools), and
-- next_reserved: whether the next call was admitted here.
-- A response of more blocks than settings.max_trace_blocks_per_iteration is refused (ZF005).
-- Errors: ZF007 budget, ZF001, ZF002, ZF003 (fence), ZF005 a cap, 22023 malformed blocks or unknown model price.
-- A call refused with ZF001/ZF002 (the lease was lost while the model answered) was still paid
-- for: the client then calls record_orphan_cost, which writes it to costs (lease_lost) and
-- charges the budgets.
-- Server time: the fence, the model's price, today's workspace budget and the
-- workspace's tokens-per-minute limit are read by one statement (the happy path of _agent_fence,
-- _price_usd and _call_budget_ids, whose calls cost more than their queries: each helper with a SET
-- clause saves and restores it); the settlement with the next admission is one statement that locks
-- the budgets in id order, checks and moves them (_move_budget's work); the result row is returned
-- without a query. The helpers still do every other case: a fence miss (_agent_fence raises), no
-- price (_price_usd raises 22023), a day row to create or re-cap, a refused or partial move.
-- Every statement runs on a generic plan, as in complete_tool_calls. The
-- planner kept choosing a custom plan for the settlement (its generic estimate for `id = any
-- ($n)` is worse than a custom plan's, which knows the array), so that statement was planned
-- anew at every call: 0.20-0.25 ms, more than it took to run. The generic plans read by primary
-- key (seq scans off), so nothing is lost. The settings cap is read by the fence's statement, the
-- options are checked by one JSON path, the costs row is claimed without a conflict target and
-- the traces and the totals are written by one statement (each statement costs an executor
-- start-up).
-- Sections: the arguments (options and usage, _model_call_options_ok and _usage_counts_ok); the
-- fence with what the call reads of other tables; the caps; the price; the costs row, the
-- iteration's claim; the budgets (_settle_model_call); the tokens per minute; the traces, marks and
-- totals in one statement.
-- The signature of @v0.4.0 (without p_next_est_usd) is replaced: a call with eight arguments
-- resolves to this one (p_next_est_usd defaults to null), which returns one more column at the end.
drop function if exists pgflight.record_model_call(bigint, bigint, bigint, integer, jsonb, jsonb, text, jsonb);
create or replace function pgflight.record_model_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint,
                                           p_iteration integer, p_blocks jsonb, p_usage jsonb, p_model text,
                                           p_options jsonb default '{}', p_next_est_usd numeric default null)
returns table (agent_run_id bigint, iteration integer, usd numeric, recorded boolean, iterations integer,
               tool_calls integer, total_usd numeric, marked text[], next_reserved boolean)
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set jit = off
as $$
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
  -- workspace's daily cap with today's (UTC) budget row, its model tokens per minute, and the
  -- settings' max_result_bytes (a statement of its own before). Subqueries, not joins:
  -- each is planned on its own, so a replan (after an ANALYZE) searches no join order.
  select r as run,
         (select s.max_result_bytes from pgflight.settings s) as max_result_bytes,
         (select s.max_trace_blocks_per_iteration from pgflight.settings s) as max_blocks,
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
    v_cap := v_f.max_result_bytes;
    v_max_blocks := v_f.max_blocks;
  else
    select s.max_result_bytes, s.max_trace_blocks_per_iteration into v_cap, v_max_blocks from pgflight.settings s;
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
  perform pgflight._require_json_depth(p_blocks, 'model response blocks');
  perform pgflight._require_json_depth(p_usage, 'usage');
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
    select a.workspace_id into v_run_workspace from pgflight.step_attempts a where a.id = p_attempt_id;
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
$$;
comment on function pgflight.record_model_call(bigint, bigint, bigint, integer, jsonb, jsonb, text, jsonb, numeric) is
  'Store a model response (traces), its usage and USD cost (costs), settle budgets and totals, and with '
  'mark_tools mark its tool calls in flight, in one transaction; returns (agent_run_id, iteration, usd, '
  'recorded, totals, marked, next_reserved); with p_next_est_usd it also admits the next call (reserving '
  'that many USD). Options (docs/options.md): stop_reason, retries, mark_tools. '
  'Errors: ZF007, ZF001, ZF002, ZF003, 22023.';
grant execute on function pgflight.record_model_call(bigint, bigint, bigint, integer, jsonb, jsonb, text, jsonb, numeric) to pgflight_worker;

commit;
