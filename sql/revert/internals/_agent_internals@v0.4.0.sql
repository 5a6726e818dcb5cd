-- Revert pgflight:internals/_agent_internals@v0.4.0: restores the previous definition, deploy/internals/_agent_internals@v0.2.0.sql (written by scripts/gen_sql_scripts.py)
-- Defines: _agent_fence(), _price_usd(), _store_tool_results().
-- Agent internals: the fence every agent write passes, model pricing, storing tool results.
-- None is granted to any role.
begin;
set local role pgflight_owner;

-- The fence of every agent write: the attempt must be claimed or running with this token (else
-- ZF001 / ZF002 / ZF003 from _reject_write) and the agent run must belong to its step (else ZF003).
-- One statement locks the attempt FOR SHARE (a concurrent reclaim skips it, a cancel waits for us)
-- and then the agent run FOR UPDATE (one writer per agent). Returns the agent run row.
create or replace function pgflight._agent_fence(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_operation text)
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
create or replace function pgflight._price_usd(p_model text, p_usage jsonb)
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

-- Store tool_result blocks (a JSON array; each names its call by tool_use_id) as the results of
-- their tool calls in agent run p_run_id, set-based: the row of each call (seq 1000 + the
-- tool_use's seq) is written or, when in flight or interrupted, completed; a call already
-- completed keeps its first result (as does the first of two results for one call in the array).
-- Returns the tool_use ids stored now. Errors: 22023 not an array of tool_result blocks with a
-- tool_use_id, ZF003 a tool_use_id with no tool_use in the transcript (nothing stored).
create or replace function pgflight._store_tool_results(p_run_id bigint, p_attempt_id bigint, p_results jsonb, p_now timestamptz)
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
