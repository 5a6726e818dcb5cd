-- Deploy pgflight:functions/complete_tool_call

begin;

set local role pgflight_owner;

-- Complete a tool call with its result: p_result is the tool_result block sent back to the model
-- ({"type": "tool_result", "tool_use_id": ..., "content": ..., "is_error": ...}; its tool_use_id is
-- set to p_tool_use_id). Completing a call never marked (e.g. a result that tells the model an
-- interrupted call could not be verified) writes the row directly. A call already completed keeps
-- its first result (completed = false).
-- Errors: ZF003 no such tool_use, ZF001, ZF002 (fence), 22023 result is not a tool_result block,
-- ZF005 result nested deeper than settings.max_json_depth.
CREATE OR REPLACE FUNCTION pgflight.complete_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text, p_result jsonb) RETURNS TABLE(trace_id bigint, completed boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_run pgflight.agent_runs;
  v_stored text[];
begin
  if p_result is null or jsonb_typeof(p_result) <> 'object' or p_result ->> 'type' is distinct from 'tool_result' then
    raise exception using errcode = '22023', message = 'result must be a tool_result block',
      hint = '{"type": "tool_result", "tool_use_id": "...", "content": "..."}';
  end if;
  perform pgflight._require_json_depth(p_result, 'tool result');
  v_run := pgflight._agent_fence(p_attempt_id, p_token, p_agent_run_id, 'complete_tool_call');
  v_stored := pgflight._store_tool_results(v_run.id, p_attempt_id,
                jsonb_build_array(p_result || jsonb_build_object('tool_use_id', p_tool_use_id)), pgflight._now());
  return query select t.id, cardinality(v_stored) > 0 from pgflight.traces t
    where t.agent_run_id = v_run.id and t.tool_use_id = p_tool_use_id and t.block_type = 'tool_result';
end
$$;

COMMENT ON FUNCTION pgflight.complete_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text, p_result jsonb) IS 'Complete a tool call with its tool_result block (first result wins). Errors: ZF003, ZF001, ZF002, 22023.';

REVOKE ALL ON FUNCTION pgflight.complete_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text, p_result jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.complete_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text, p_result jsonb) TO pgflight_worker;

commit;
