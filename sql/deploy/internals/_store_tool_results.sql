-- Deploy pgflight:internals/_store_tool_results

begin;

set local role pgflight_owner;

-- Store tool_result blocks (a JSON array; each names its call by tool_use_id) as the results of
-- their tool calls in agent run p_run_id, set-based: the row of each call (seq
-- _seq_band_tool_results() + the tool_use's seq) is written or, when in flight or interrupted, completed; a call already
-- completed keeps its first result (as does the first of two results for one call in the array).
-- Returns the tool_use ids stored now. Errors: 22023 not an array of tool_result blocks with a
-- tool_use_id, ZF003 a tool_use_id with no tool_use in the transcript (nothing stored).
-- Generic plans: the planner kept choosing a custom plan for the store statement, so it
-- was planned anew at every call (0.15-0.37 ms of an iteration's server time, pg_stat_statements
-- with track_planning); its generic plan is the same index lookups.
CREATE OR REPLACE FUNCTION pgflight._store_tool_results(p_run_id bigint, p_attempt_id bigint, p_results jsonb, p_now timestamp with time zone) RETURNS text[]
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
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

COMMENT ON FUNCTION pgflight._store_tool_results(p_run_id bigint, p_attempt_id bigint, p_results jsonb, p_now timestamp with time zone) IS 'Internal: store tool_result blocks set-based (first result wins); returns the ids stored. 22023, ZF003.';

REVOKE ALL ON FUNCTION pgflight._store_tool_results(p_run_id bigint, p_attempt_id bigint, p_results jsonb, p_now timestamp with time zone) FROM PUBLIC;

commit;
