-- Deploy pgflight:functions/load_transcript
-- requires: functions/_agent
begin;
set local role pgflight_owner;

-- The transcript of an agent for its resumed attempt, in order (iteration, seq). First every tool
-- call left in_flight by an earlier run of the step is marked interrupted (invariant 9): the
-- caller must verify it (tool verify hook or effect receipt) before any retry, or tell the model.
-- stop_reason and usd are the model call's, repeated on each row of its iteration.
-- Errors: ZF001, ZF002, ZF003 (fence).
create function pgflight.load_transcript(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint)
returns table (iteration integer, seq integer, role text, block_type text, tool_use_id text, tool_name text,
               content jsonb, status text, attempt_id bigint, stop_reason text, usd numeric)
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_now timestamptz := pgflight._now();
  v_run pgflight.agent_runs;
begin
  v_run := pgflight._agent_fence(p_attempt_id, p_token, p_agent_run_id, 'load_transcript');
  update pgflight.traces t set status = 'interrupted', updated_at = v_now
   where t.agent_run_id = v_run.id and t.status = 'in_flight';
  return query
    select t.iteration, t.seq, t.role, t.block_type, t.tool_use_id, t.tool_name, t.content, t.status,
           t.attempt_id, c.stop_reason, c.usd
      from pgflight.traces t
      left join pgflight.costs c on c.agent_run_id = t.agent_run_id and c.iteration = t.iteration
     where t.agent_run_id = v_run.id
     order by t.iteration, t.seq;
end
$$;
comment on function pgflight.load_transcript(bigint, bigint, bigint) is
  'Resume: mark in-flight tool calls interrupted and return the transcript in order. Errors: ZF001, ZF002, ZF003.';
grant execute on function pgflight.load_transcript(bigint, bigint, bigint) to pgflight_worker;

-- Read: the agent of a step (null row when the step is not an agent) with its totals, caps and
-- current step status. For the CLI (pgflight trace) and operators.
create function pgflight.agent_run_of(p_step_id bigint)
returns table (agent_run_id bigint, step_id bigint, run_id bigint, model text, system_prompt text,
               max_iterations integer, max_tool_calls integer, iterations integer, tool_calls integer,
               input_tokens bigint, output_tokens bigint, cache_creation_tokens bigint, cache_read_tokens bigint,
               usd numeric, step_status text, result jsonb, created_at timestamptz)
language sql stable security definer
set search_path = ''
as $$
  select r.id, r.step_id, r.run_id, r.model, r.system_prompt, r.max_iterations, r.max_tool_calls, r.iterations,
         r.tool_calls, r.input_tokens, r.output_tokens, r.cache_creation_tokens, r.cache_read_tokens, r.usd,
         a.status, a.result, r.created_at
    from pgflight.agent_runs r
    join pgflight.steps s on s.id = r.step_id
    join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no
   where r.step_id = p_step_id
$$;
comment on function pgflight.agent_run_of(bigint) is 'Read: the agent run of a step, with totals and step status.';

-- Read: the agent runs whose step ended with p_status (default succeeded), oldest first, after
-- agent run id p_after (keyset paging), at most p_limit. For pgflight export-dataset.
create function pgflight.agent_runs_by_status(p_status text default 'succeeded', p_after bigint default 0,
                                              p_limit integer default 1000)
returns table (agent_run_id bigint, step_id bigint, run_id bigint, model text, system_prompt text,
               iterations integer, usd numeric, result jsonb)
language sql stable security definer
set search_path = ''
as $$
  select r.id, r.step_id, r.run_id, r.model, r.system_prompt, r.iterations, r.usd, a.result
    from pgflight.agent_runs r
    join pgflight.steps s on s.id = r.step_id
    join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no
   where a.status = p_status and r.id > p_after
   order by r.id
   limit p_limit
$$;
comment on function pgflight.agent_runs_by_status(text, bigint, integer) is
  'Read: agent runs whose step status is p_status, keyset-paged by agent run id.';

-- Read: the flight recorder of an agent run without side effects, with each model call's usage and
-- USD on its iteration's rows.
create function pgflight.agent_transcript(p_agent_run_id bigint)
returns table (iteration integer, seq integer, role text, block_type text, tool_use_id text, tool_name text,
               content jsonb, status text, tokens integer, attempt_id bigint, created_at timestamptz,
               model text, input_tokens bigint, output_tokens bigint, cache_creation_tokens bigint,
               cache_read_tokens bigint, usd numeric, stop_reason text)
language sql stable security definer
set search_path = ''
as $$
  select t.iteration, t.seq, t.role, t.block_type, t.tool_use_id, t.tool_name, t.content, t.status, t.tokens,
         t.attempt_id, t.created_at, c.model, c.input_tokens, c.output_tokens, c.cache_creation_tokens,
         c.cache_read_tokens, c.usd, c.stop_reason
    from pgflight.traces t
    left join pgflight.costs c on c.agent_run_id = t.agent_run_id and c.iteration = t.iteration
   where t.agent_run_id = p_agent_run_id
   order by t.iteration, t.seq
$$;
comment on function pgflight.agent_transcript(bigint) is 'Read: an agent run''s trace rows in order, with per-call costs.';

grant execute on function pgflight.agent_run_of(bigint), pgflight.agent_runs_by_status(text, bigint, integer),
                          pgflight.agent_transcript(bigint) to pgflight_operator, pgflight_reader;

commit;
