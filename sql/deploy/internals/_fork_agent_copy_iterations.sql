-- Deploy pgflight:internals/_fork_agent_copy_iterations

begin;

set local role pgflight_owner;

-- The reused iterations 0 .. p_at_iteration - 1 of agent run p_from_agent_run_id, copied into the
-- fork's agent run p_agent_run_id: the task, each response and the results the next call was
-- sent (completed rows; a patched result, p_results by tool_use id, replaces the recorded one, or
-- is written at the seq the loop would have used when none is on record); system blocks stay with
-- the original; and one costs row per reused iteration at USD 0, marked reused.
CREATE OR REPLACE FUNCTION pgflight._fork_agent_copy_iterations(p_from_agent_run_id bigint, p_at_iteration integer, p_results jsonb, p_agent_run_id bigint, p_step_id bigint, p_run_id bigint, p_workspace_id bigint, p_now timestamp with time zone) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  -- the reused iterations: the task, each response, and the results the next call was sent
  -- (patched ones replaced); api_error and other system blocks (the system band) stay with the original
  insert into pgflight.traces (agent_run_id, iteration, seq, role, block_type, tool_use_id, tool_name, content,
                               status, tokens, attempt_id, created_at, updated_at)
  select p_agent_run_id, t.iteration, t.seq, t.role, t.block_type, t.tool_use_id, t.tool_name,
         case when t.block_type = 'tool_result' and p_results ? t.tool_use_id
              then jsonb_build_object('type', 'tool_result', 'tool_use_id', t.tool_use_id,
                                      'content', p_results -> t.tool_use_id)
              else t.content end,
         'completed', t.tokens, null, p_now, p_now
    from pgflight.traces t
   where t.agent_run_id = p_from_agent_run_id and t.iteration < p_at_iteration
     and (t.iteration = 0 or t.seq < pgflight._seq_band_system())
     and (t.block_type <> 'tool_result' or t.status = 'completed' or p_results ? t.tool_use_id);
  -- a patched result of a call that has none on record: at the seq the loop would have used
  insert into pgflight.traces (agent_run_id, iteration, seq, role, block_type, tool_use_id, tool_name, content,
                               status, tokens, attempt_id, created_at, updated_at)
  select p_agent_run_id, u.iteration, pgflight._seq_band_tool_results() + u.seq, 'user', 'tool_result', u.tool_use_id,
         u.tool_name,
         jsonb_build_object('type', 'tool_result', 'tool_use_id', u.tool_use_id, 'content', p_results -> u.tool_use_id),
         'completed', ceil(length((p_results -> u.tool_use_id)::text) / 4.0)::integer, null, p_now, p_now
    from pgflight.traces u
   where u.agent_run_id = p_from_agent_run_id and u.iteration = p_at_iteration - 1 and u.block_type = 'tool_use'
     and u.seq < pgflight._seq_band_tool_results() and p_results ? u.tool_use_id
     and not exists (select from pgflight.traces t
                      where t.agent_run_id = p_agent_run_id and t.iteration = u.iteration and t.block_type = 'tool_result'
                        and t.tool_use_id = u.tool_use_id);
  insert into pgflight.costs (agent_run_id, iteration, step_id, run_id, workspace_id, model, usd, stop_reason,
                              retries, attempt_id, at, reused)
  select p_agent_run_id, c.iteration, p_step_id, p_run_id, p_workspace_id, c.model, 0, c.stop_reason, 0, null, p_now, true
    from pgflight.costs c
   where c.agent_run_id = p_from_agent_run_id and c.iteration between 1 and p_at_iteration - 1 and not c.lease_lost;
end
$$;

COMMENT ON FUNCTION pgflight._fork_agent_copy_iterations(p_from_agent_run_id bigint, p_at_iteration integer, p_results jsonb, p_agent_run_id bigint, p_step_id bigint, p_run_id bigint, p_workspace_id bigint, p_now timestamp with time zone) IS 'Internal (fork_agent): copy the reused iterations (traces, patched results, costs at USD 0) into the fork''s agent run.';

REVOKE ALL ON FUNCTION pgflight._fork_agent_copy_iterations(p_from_agent_run_id bigint, p_at_iteration integer, p_results jsonb, p_agent_run_id bigint, p_step_id bigint, p_run_id bigint, p_workspace_id bigint, p_now timestamp with time zone) FROM PUBLIC;

commit;
