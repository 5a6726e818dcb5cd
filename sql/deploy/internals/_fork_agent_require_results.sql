-- Deploy pgflight:internals/_fork_agent_require_results

begin;

set local role pgflight_owner;

-- The patched tool results of a fork against iteration p_iteration (k-1) of the original agent
-- run: every patched result names a tool call of that iteration (the calls iteration k is told
-- about; 22023 listing them otherwise), and every other tool call of it has its result on record
-- (ZF006: in flight or never run).
CREATE OR REPLACE FUNCTION pgflight._fork_agent_require_results(p_agent_run_id bigint, p_iteration integer, p_results jsonb) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_bad text;
begin
  -- every patched result names a tool call of the iteration (the calls the fork's first is told about)
  select v.key into v_bad from jsonb_each(p_results) v
   where not exists (select from pgflight.traces t
                      where t.agent_run_id = p_agent_run_id and t.iteration = p_iteration
                        and t.block_type = 'tool_use' and t.tool_use_id = v.key
                        and t.seq < pgflight._seq_band_tool_results())
   limit 1;
  if found then
    raise exception using errcode = '22023',
      message = format('patch tool_results.%s is not a tool call of iteration %s', left(v_bad, 256), p_iteration),
      detail = format('the tool calls of iteration %s of agent run %s: %s', p_iteration, p_agent_run_id,
                      coalesce((select string_agg(t.tool_use_id, ', ' order by t.seq) from pgflight.traces t
                                 where t.agent_run_id = p_agent_run_id and t.iteration = p_iteration
                                   and t.block_type = 'tool_use' and t.seq < pgflight._seq_band_tool_results()), 'none')),
      hint = 'Patch only the results the forked iteration is sent (pgflight.agent_transcript shows them).';
  end if;
  -- and every other tool call of it has its result on record
  select u.tool_use_id into v_bad from pgflight.traces u
   where u.agent_run_id = p_agent_run_id and u.iteration = p_iteration and u.block_type = 'tool_use'
     and u.seq < pgflight._seq_band_tool_results() and not p_results ? u.tool_use_id
     and not exists (select from pgflight.traces t
                      where t.agent_run_id = p_agent_run_id and t.iteration = u.iteration and t.block_type = 'tool_result'
                        and t.tool_use_id = u.tool_use_id and t.status = 'completed')
   limit 1;
  if found then
    raise exception using errcode = 'ZF006',
      message = format('tool call %s of iteration %s has no recorded result', v_bad, p_iteration),
      detail = format('agent run %s; the call is in flight or was never run', p_agent_run_id),
      hint = 'Give its result in the patch (tool_results), or fork at an earlier iteration.';
  end if;
end
$$;

COMMENT ON FUNCTION pgflight._fork_agent_require_results(p_agent_run_id bigint, p_iteration integer, p_results jsonb) IS 'Internal (fork_agent): 22023 a patched result that is no tool call of the iteration, ZF006 a call of it with no recorded result and none patched.';

REVOKE ALL ON FUNCTION pgflight._fork_agent_require_results(p_agent_run_id bigint, p_iteration integer, p_results jsonb) FROM PUBLIC;

commit;
