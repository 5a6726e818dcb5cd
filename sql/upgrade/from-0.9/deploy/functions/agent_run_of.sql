-- Deploy pgflight:functions/agent_run_of
begin;
set local role pgflight_owner;

-- Read: the agent of a step (null row when the step is not an agent) with its totals, caps and
-- current step status. For the CLI (pgflight trace) and operators. A step outside the login's
-- workspaces answers exactly as a step that does not exist: no row.
create or replace function pgflight.agent_run_of(p_step_id bigint)
returns table (agent_run_id bigint, step_id bigint, run_id bigint, model text, system_prompt text,
               max_iterations integer, max_tool_calls integer, iterations integer, tool_calls integer,
               input_tokens bigint, output_tokens bigint, cache_creation_tokens bigint, cache_read_tokens bigint,
               usd numeric, step_status text, result jsonb, created_at timestamptz)
language plpgsql stable security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  -- the lane on the agent run's workspace, in the one statement: outside it, no row
  return query
    select r.id, r.step_id, r.run_id, r.model, r.system_prompt, r.max_iterations, r.max_tool_calls, r.iterations,
           r.tool_calls, r.input_tokens, r.output_tokens, r.cache_creation_tokens, r.cache_read_tokens, r.usd,
           a.status, a.result, r.created_at
      from pgflight.agent_runs r
      join pgflight.steps s on s.id = r.step_id
      join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no
     where r.step_id = p_step_id and pgflight._may('reader', r.workspace_id);
end
$$;
comment on function pgflight.agent_run_of(bigint) is 'Read: the agent run of a step, with totals and step status.';
grant execute on function pgflight.agent_run_of(bigint) to pgflight_operator, pgflight_reader;

commit;
