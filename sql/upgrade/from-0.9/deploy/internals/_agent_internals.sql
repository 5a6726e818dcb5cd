-- Deploy pgflight:internals/_agent_internals
-- Defines: _seq_band_tool_results(), _seq_band_system(), _agent_fence(), _price_of(), _usage_extras(),
-- _price_usd(), _store_tool_results().
-- Agent internals: the transcript's seq bands, the fence every agent write passes, model pricing,
-- storing tool results.
-- None is granted to any role.
begin;
set local role pgflight_owner;

-- The transcript's seq bands, named once (python_worker/pgflight/transcript.py names them for the
-- client; docs/agents.md, "The transcript's numbering"): within an iteration, seq 0 .. k are the
-- model's response blocks (role assistant; iteration 0 holds the task), 1000 + j is the
-- tool_result answering the tool_use at seq j (role user), 2000 and on are blocks of the system
-- (an api_error record_trace writes). A response stays in its band while it holds at most 1000
-- blocks (settings.max_trace_blocks_per_iteration, 1000 by default). Immutable SQL with no SET clause:
-- the planner inlines each as its constant, so a query reads the same as with the literal.
create or replace function pgflight._seq_band_tool_results()
returns integer
language sql immutable
as $$ select 1000 $$;
comment on function pgflight._seq_band_tool_results() is
  'Internal: the first seq of the transcript''s tool results (a tool_use at seq j has its result at this + j).';

create or replace function pgflight._seq_band_system()
returns integer
language sql immutable
as $$ select 2000 $$;
comment on function pgflight._seq_band_system() is
  'Internal: the first seq of the transcript''s system blocks (record_trace''s default: the next free seq from here).';

-- The fence of every agent write: the attempt must be claimed or running with this token (else
-- ZF001 / ZF002 / ZF003 from _reject_write) and the agent run must belong to its step (else ZF003).
-- One statement locks the attempt FOR SHARE (a concurrent reclaim skips it, a cancel waits for us)
-- and then the agent run FOR UPDATE (one writer per agent). Returns the agent run row.
-- Seq scans off (jit off, so their penalty cannot trigger compilation; issue 18): a plan made while
-- step_attempts was small read it whole at every fenced write once it grew.
create or replace function pgflight._agent_fence(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_operation text)
returns pgflight.agent_runs
language plpgsql volatile
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
set jit = off
as $$
declare
  v_run pgflight.agent_runs;
begin
  select r.* into v_run
    from pgflight.step_attempts a
    join pgflight.agent_runs r on r.step_id = a.step_id
   where a.id = p_attempt_id and a.fencing_token = p_token and a.status in ('claimed', 'running')
     and r.id = p_agent_run_id
     -- issue 13: only the login whose worker holds the attempt (else ZF012 from _reject_write)
     and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user)
     for share of a for update of r;
  if found then
    return v_run;
  end if;
  perform 1 from pgflight.step_attempts a join pgflight.workers w on w.id = a.worker_id
   where a.id = p_attempt_id and a.fencing_token = p_token and a.status in ('claimed', 'running')
     and w.login = session_user;
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

-- USD of one model call from its counts and a model_prices row: input, output, five-minute cache
-- writes, one-hour cache writes, cache reads (tokens, priced per million) and server-side web
-- searches (priced per search). p_cw is cache_creation_input_tokens, which counts the one-hour
-- writes p_cw_1h too: the five-minute writes are the rest. One-hour writes are priced at
-- cache_write_1h_usd_per_mtok, or twice the input price when the row has none (Anthropic's rule:
-- https://platform.claude.com/docs/en/about-claude/pricing, "Model pricing": a one-hour cache
-- write costs 2x the base input price, a five-minute one 1.25x; "Web search tool": USD 10 per
-- 1,000 searches). Called by _price_usd and record_model_call, so both price alike.
create or replace function pgflight._price_of(p_price pgflight.model_prices, p_in bigint, p_out bigint, p_cw bigint,
                                   p_cr bigint, p_cw_1h bigint, p_searches bigint)
returns numeric
language sql immutable
set search_path = pg_catalog, pg_temp
as $$
  select (p_in * p_price.input_usd_per_mtok + p_out * p_price.output_usd_per_mtok
          + (greatest(p_cw, p_cw_1h) - p_cw_1h) * p_price.cache_write_usd_per_mtok
          + p_cw_1h * coalesce(p_price.cache_write_1h_usd_per_mtok, 2 * p_price.input_usd_per_mtok)
          + p_cr * p_price.cache_read_usd_per_mtok) / 1000000
         + p_searches * p_price.web_search_usd_per_request
$$;
comment on function pgflight._price_of(pgflight.model_prices, bigint, bigint, bigint, bigint, bigint, bigint) is
  'Internal: USD of a call from its token counts (5-minute and 1-hour cache writes apart) and web searches.';

-- The two usage counts beyond the four token totals: usage.cache_creation.ephemeral_1h_input_tokens
-- (one-hour cache writes) and usage.server_tool_use.web_search_requests, each an integer from 0 to
-- 1e10 (22023 naming the key otherwise; absent or null: 0).
create or replace function pgflight._usage_extras(p_usage jsonb, out cw_1h bigint, out searches bigint)
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
begin
  cw_1h := pgflight._opt_int(p_usage -> 'cache_creation', 'ephemeral_1h_input_tokens', 0, 0, 10000000000,
                             'usage.cache_creation');
  searches := pgflight._opt_int(p_usage -> 'server_tool_use', 'web_search_requests', 0, 0, 10000000000,
                                'usage.server_tool_use');
end
$$;
comment on function pgflight._usage_extras(jsonb) is
  'Internal: one-hour cache-write tokens and web searches of a usage object (0 when absent); 22023 if malformed.';

-- USD of one model call: usage (Messages API field names: input_tokens, output_tokens,
-- cache_creation_input_tokens, cache_read_input_tokens, cache_creation.ephemeral_1h_input_tokens,
-- server_tool_use.web_search_requests) priced by the longest model_prices.model that prefixes
-- p_model (_price_of). 22023 when no price matches or a count is malformed.
create or replace function pgflight._price_usd(p_model text, p_usage jsonb)
returns numeric
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_p pgflight.model_prices;
  v_x record;
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
  v_x := pgflight._usage_extras(p_usage);
  return pgflight._price_of(v_p,
                            pgflight._opt_int(p_usage, 'input_tokens', 0, 0, 10000000000, 'usage'),
                            pgflight._opt_int(p_usage, 'output_tokens', 0, 0, 10000000000, 'usage'),
                            pgflight._opt_int(p_usage, 'cache_creation_input_tokens', 0, 0, 10000000000, 'usage'),
                            pgflight._opt_int(p_usage, 'cache_read_input_tokens', 0, 0, 10000000000, 'usage'),
                            v_x.cw_1h, v_x.searches);
end
$$;
comment on function pgflight._price_usd(text, jsonb) is
  'Internal: USD of a call from its usage and pgflight.model_prices (longest prefix). 22023 unknown model.';

-- Store tool_result blocks (a JSON array; each names its call by tool_use_id) as the results of
-- their tool calls in agent run p_run_id, set-based: the row of each call (seq
-- _seq_band_tool_results() + the tool_use's seq) is written or, when in flight or interrupted, completed; a call already
-- completed keeps its first result (as does the first of two results for one call in the array).
-- Returns the tool_use ids stored now. Errors: 22023 not an array of tool_result blocks with a
-- tool_use_id, ZF003 a tool_use_id with no tool_use in the transcript (nothing stored).
-- Generic plans (issue 18): the planner kept choosing a custom plan for the store statement, so it
-- was planned anew at every call (0.15-0.37 ms of an iteration's server time, pg_stat_statements
-- with track_planning); its generic plan is the same index lookups.
create or replace function pgflight._store_tool_results(p_run_id bigint, p_attempt_id bigint, p_results jsonb, p_now timestamptz)
returns text[]
language plpgsql volatile
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set jit = off
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
    select p_run_id, j.iteration, pgflight._seq_band_tool_results() + j.seq, 'user', 'tool_result', j.tid, j.tool_name, j.result, 'completed',
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
