-- Deploy pgflight:functions/record_trace
-- requires: functions/_agent
begin;
set local role pgflight_owner;

-- Store one trace block that is not a model response: a transient API error met while making
-- iteration p_iteration's call (block_type api_error, role system), or any other block a client
-- wants on the record. A repeated write with the same seq is a no-op (created = false).
-- options: seq (default: the next free seq >= 2000 in the iteration), tool_use_id, tool_name,
-- status (default completed), tokens.
-- Errors: ZF001, ZF002, ZF003 (fence), 22023 (constraint violations of role, block_type, status).
create function pgflight.record_trace(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint,
                                      p_iteration integer, p_role text, p_block_type text, p_content jsonb,
                                      p_options jsonb default '{}')
returns table (trace_id bigint, seq integer, created boolean)
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_now timestamptz := pgflight._now();
  v_run pgflight.agent_runs;
  v_seq integer;
  v_id bigint;
begin
  v_run := pgflight._agent_fence(p_attempt_id, p_token, p_agent_run_id, 'record_trace');
  v_seq := pgflight._opt_num(p_options, 'seq', null)::integer;
  if v_seq is null then
    select greatest(coalesce(max(t.seq) + 1, 2000), 2000) into v_seq from pgflight.traces t
     where t.agent_run_id = v_run.id and t.iteration = p_iteration and t.seq >= 2000;
  end if;
  begin
    insert into pgflight.traces (agent_run_id, iteration, seq, role, block_type, tool_use_id, tool_name, content,
                                 status, tokens, attempt_id, created_at, updated_at)
    values (v_run.id, p_iteration, v_seq, p_role, p_block_type, pgflight._opt_text(p_options, 'tool_use_id', null),
            pgflight._opt_text(p_options, 'tool_name', null), p_content,
            pgflight._opt_text(p_options, 'status', 'completed'),
            coalesce(pgflight._opt_num(p_options, 'tokens', null)::integer, ceil(length(coalesce(p_content::text, '')) / 4.0)::integer),
            p_attempt_id, v_now, v_now)
    on conflict on constraint block_is_unique do nothing
    returning id into v_id;
  exception when check_violation or not_null_violation then
    raise exception using errcode = '22023', message = 'malformed trace block', detail = sqlerrm,
      hint = 'role: user|assistant|system; block_type: thinking|text|tool_use|tool_result|api_error; '
             'status: completed|in_flight|interrupted; tool blocks need tool_use_id.';
  end;
  if v_id is null then
    return query select t.id, t.seq, false from pgflight.traces t
     where t.agent_run_id = v_run.id and t.iteration = p_iteration and t.seq = v_seq;
    return;
  end if;
  return query select v_id, v_seq, true;
end
$$;
comment on function pgflight.record_trace(bigint, bigint, bigint, integer, text, text, jsonb, jsonb) is
  'Store one trace block (e.g. a transient API error); idempotent by seq. Errors: ZF001, ZF002, ZF003, 22023.';

-- Mark a tool call in flight, before the tool runs: the tool_result row (seq 1000 + the tool_use's
-- seq) is written with status in_flight. The first mark counts against the agent's max_tool_calls
-- (ZF007 when the call would pass it). Marking a call that was interrupted (a retry decided by the
-- client after verify) puts it back in flight without counting it again; marking a completed call
-- changes nothing. Returns the status the call had before (new, in_flight, interrupted or
-- completed) and, when completed, its stored result block. (record_model_call with mark_tools
-- marks a response's calls in the same transaction; this serves resumed and over-cap calls.)
-- Errors: ZF007 tool-call cap, ZF003 no such tool_use in the transcript, ZF001, ZF002 (fence).
create function pgflight.mark_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text)
returns table (trace_id bigint, previous_status text, content jsonb)
language plpgsql volatile security definer
set search_path = ''
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

-- Complete a tool call with its result: p_result is the tool_result block sent back to the model
-- ({"type": "tool_result", "tool_use_id": ..., "content": ..., "is_error": ...}; its tool_use_id is
-- set to p_tool_use_id). Completing a call never marked (e.g. a result that tells the model an
-- interrupted call could not be verified) writes the row directly. A call already completed keeps
-- its first result (completed = false).
-- Errors: ZF003 no such tool_use, ZF001, ZF002 (fence), 22023 result is not a tool_result block.
create function pgflight.complete_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint,
                                            p_tool_use_id text, p_result jsonb)
returns table (trace_id bigint, completed boolean)
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_run pgflight.agent_runs;
  v_stored text[];
begin
  if p_result is null or jsonb_typeof(p_result) <> 'object' or p_result ->> 'type' is distinct from 'tool_result' then
    raise exception using errcode = '22023', message = 'result must be a tool_result block',
      hint = '{"type": "tool_result", "tool_use_id": "...", "content": "..."}';
  end if;
  v_run := pgflight._agent_fence(p_attempt_id, p_token, p_agent_run_id, 'complete_tool_call');
  v_stored := pgflight._store_tool_results(v_run.id, p_attempt_id,
                jsonb_build_array(p_result || jsonb_build_object('tool_use_id', p_tool_use_id)), pgflight._now());
  return query select t.id, cardinality(v_stored) > 0 from pgflight.traces t
    where t.agent_run_id = v_run.id and t.tool_use_id = p_tool_use_id and t.block_type = 'tool_result';
end
$$;
comment on function pgflight.complete_tool_call(bigint, bigint, bigint, text, jsonb) is
  'Complete a tool call with its tool_result block (first result wins). Errors: ZF003, ZF001, ZF002, 22023.';

-- Complete an iteration's tool calls in one transaction and, with p_next_iteration, admit the next
-- model call in the same transaction: the agent loop's second (and last) write of an iteration.
-- p_results: a JSON array of tool_result blocks, each naming its call by tool_use_id; stored as
-- complete_tool_call does (first result wins). p_next_iteration / p_est_usd: the admission of
-- reserve_budget for that call (iteration cap, wall-time and USD caps, est USD reserved; C24).
-- A refused admission does not undo the results: they are stored, nothing is reserved, and the
-- refusal comes back as reserved = false with refusal = {message, detail, hint} of the ZF007 that
-- reserve_budget would raise (the client raises it).
-- Returns: stored (tool_use ids stored now), reserved, reserved_usd.
-- Errors: ZF003 no such tool_use (nothing stored), ZF001, ZF002 (fence), 22023 malformed results,
-- iteration < 1 or est_usd < 0.
create function pgflight.complete_tool_calls(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint,
                                             p_results jsonb, p_next_iteration integer default null,
                                             p_est_usd numeric default null)
returns table (agent_run_id bigint, stored text[], reserved boolean, reserved_usd numeric, refusal jsonb)
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_now timestamptz := pgflight._now();
  v_run pgflight.agent_runs;
  v_stored text[];
  v_refusal jsonb;
begin
  if p_next_iteration is not null and (p_next_iteration < 1 or p_est_usd is null or p_est_usd < 0) then
    raise exception using errcode = '22023', message = 'next iteration must be >= 1 and est_usd >= 0',
      detail = format('next iteration %s, est_usd %s', p_next_iteration, p_est_usd);
  end if;
  v_run := pgflight._agent_fence(p_attempt_id, p_token, p_agent_run_id, 'complete_tool_calls');
  v_stored := pgflight._store_tool_results(v_run.id, p_attempt_id, p_results, v_now);
  if p_next_iteration is null then
    return query select v_run.id, v_stored, false, 0::numeric, null::jsonb;
    return;
  end if;
  v_refusal := pgflight._reserve(v_run, p_attempt_id, p_next_iteration, p_est_usd, v_now);
  return query select v_run.id, v_stored, v_refusal is null,
                      case when v_refusal is null then p_est_usd else 0 end, v_refusal;
end
$$;
comment on function pgflight.complete_tool_calls(bigint, bigint, bigint, jsonb, integer, numeric) is
  'Store an iteration''s tool results and admit the next model call, in one transaction; a refused '
  'admission is returned (reserved = false, refusal), not raised. Errors: ZF003, ZF001, ZF002, 22023.';

grant execute on function pgflight.record_trace(bigint, bigint, bigint, integer, text, text, jsonb, jsonb),
                          pgflight.mark_tool_call(bigint, bigint, bigint, text),
                          pgflight.complete_tool_call(bigint, bigint, bigint, text, jsonb),
                          pgflight.complete_tool_calls(bigint, bigint, bigint, jsonb, integer, numeric) to pgflight_worker;

commit;
