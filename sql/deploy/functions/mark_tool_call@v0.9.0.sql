-- Deploy pgflight:functions/mark_tool_call
begin;
set local role pgflight_owner;

-- Mark a tool call in flight, before the tool runs: the tool_result row (seq 1000 + the tool_use's
-- seq) is written with status in_flight. The first mark counts against the agent's max_tool_calls
-- (ZF007 when the call would pass it). Marking a call that was interrupted (a retry decided by the
-- client after verify) puts it back in flight without counting it again; marking a completed call
-- changes nothing. Returns the status the call had before (new, in_flight, interrupted or
-- completed) and, when completed, its stored result block. (record_model_call with mark_tools
-- marks a response's calls in the same transaction; this serves resumed and over-cap calls.)
-- Errors: ZF007 tool-call cap, ZF003 no such tool_use in the transcript, ZF001, ZF002 (fence).
create or replace function pgflight.mark_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text)
returns table (trace_id bigint, previous_status text, content jsonb)
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := pgflight._now();
  v_run pgflight.agent_runs;
  v_use pgflight.traces;
  v_res pgflight.traces;
  v_id bigint;
begin
  v_run := pgflight._agent_fence(p_attempt_id, p_token, p_agent_run_id, 'mark_tool_call');
  select t.* into v_use from pgflight.traces t
   where t.agent_run_id = v_run.id and t.tool_use_id = p_tool_use_id and t.block_type = 'tool_use';
  if not found then
    raise exception using errcode = 'ZF003',
      message = format('no tool_use %L in agent run %s', p_tool_use_id, v_run.id),
      hint = 'Record the model call (record_model_call) before marking its tool calls.';
  end if;
  insert into pgflight.traces (agent_run_id, iteration, seq, role, block_type, tool_use_id, tool_name, content,
                               status, attempt_id, created_at, updated_at)
  values (v_run.id, v_use.iteration, 1000 + v_use.seq, 'user', 'tool_result', p_tool_use_id, v_use.tool_name,
          null, 'in_flight', p_attempt_id, v_now, v_now)
  on conflict on constraint block_is_unique do nothing
  returning id into v_id;
  if v_id is not null then
    if v_run.tool_calls + 1 > v_run.max_tool_calls then
      raise exception using errcode = 'ZF007',
        message = format('budget exceeded: agent run %s may make %s tool calls', v_run.id, v_run.max_tool_calls),
        detail = format('scope=agent cap=max_tool_calls max_tool_calls=%s tool_calls=%s tool_use_id=%s',
                        v_run.max_tool_calls, v_run.tool_calls, p_tool_use_id),
        hint = 'Raise max_tool_calls for the agent (input caps, or the run''s max_tool_calls option).';
    end if;
    update pgflight.agent_runs set tool_calls = tool_calls + 1, updated_at = v_now where id = v_run.id;
    return query select v_id, 'new'::text, null::jsonb;
    return;
  end if;
  select t.* into v_res from pgflight.traces t
   where t.agent_run_id = v_run.id and t.iteration = v_use.iteration and t.seq = 1000 + v_use.seq;
  if v_res.status = 'interrupted' then
    update pgflight.traces t set status = 'in_flight', attempt_id = p_attempt_id, updated_at = v_now
     where t.agent_run_id = v_run.id and t.iteration = v_use.iteration and t.seq = 1000 + v_use.seq;
  end if;
  return query select v_res.id, v_res.status, v_res.content;
end
$$;
comment on function pgflight.mark_tool_call(bigint, bigint, bigint, text) is
  'Mark a tool call in flight before it runs; returns its previous status. Errors: ZF007, ZF003, ZF001, ZF002.';
grant execute on function pgflight.mark_tool_call(bigint, bigint, bigint, text) to pgflight_worker;

commit;
