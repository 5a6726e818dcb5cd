-- Deploy pgflight:functions/mark_tool_call

begin;

set local role pgflight_owner;

CREATE OR REPLACE FUNCTION pgflight.mark_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text) RETURNS TABLE(trace_id bigint, previous_status text, content jsonb, policy text, arguments jsonb)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_run pgflight.agent_runs;
  v_use pgflight.traces;
  v_res pgflight.traces;
  v_pol pgflight.tool_policies;
  v_gate pgflight.approvals;
  v_ws bigint;
  v_args jsonb;
  v_run_args jsonb;
  v_verdict text := 'allow';
  v_block jsonb;
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
  v_args := coalesce(v_use.content -> 'input', '{}');
  v_run_args := v_args;
  select t.* into v_res from pgflight.traces t
   where t.agent_run_id = v_run.id and t.iteration = v_use.iteration and t.seq = pgflight._seq_band_tool_results() + v_use.seq;
  if v_res.id is null then
    -- a new call: the workspace's policy for this tool, else its '*' policy, when its conditions hold
    select a.workspace_id into v_ws from pgflight.step_attempts a where a.id = p_attempt_id;
    select p.* into v_pol from pgflight.tool_policies p
     where p.workspace_id = v_ws and p.tool_name in (v_use.tool_name, '*')
     order by p.tool_name = '*' limit 1;
    if found and v_pol.action <> 'allow'
       and (v_pol.condition is null or jsonb_path_exists(v_args, v_pol.condition, '{}', true))
       and (v_pol.over_usd is null or v_run.usd >= v_pol.over_usd) then
      v_verdict := v_pol.action;
    end if;
    if v_verdict = 'require_approval' then  -- its gate (a probe of the gate key's unique index)
      select g.* into v_gate from pgflight.approvals g
       where g.step_id = v_run.step_id and g.gate_key = 'tool:' || p_tool_use_id;
    end if;
    if v_verdict = 'require_approval' and v_gate.decision is null then
      insert into pgflight.approvals as g (step_id, gate_key, request, requested_at)
      values (v_run.step_id, 'tool:' || p_tool_use_id,
              jsonb_build_object('tool', v_use.tool_name, 'tool_use_id', p_tool_use_id, 'arguments', v_args),
              v_now)
      on conflict on constraint gate_key_is_unique_per_step do update
         set request = coalesce(g.request, excluded.request), requested_at = coalesce(g.requested_at, excluded.requested_at);
      return query select null::bigint, 'new'::text, null::jsonb, 'approval_required'::text, v_args;
      return;
    end if;
    if v_verdict = 'require_approval' then
      v_verdict := case when v_gate.payload ? 'message' then 'answered'
                        when v_gate.decision = 'reject' then 'rejected'
                        when v_gate.payload ? 'arguments' and v_gate.payload -> 'arguments' <> v_args then 'edited'
                        else 'approved' end;
      v_run_args := case when v_verdict = 'edited' then v_gate.payload -> 'arguments' else v_args end;
      insert into pgflight.traces (agent_run_id, iteration, seq, role, block_type, tool_use_id, tool_name, content,
                                   status, attempt_id, created_at, updated_at)
      values (v_run.id, v_use.iteration, 3000 + v_use.seq, 'system', 'tool_approval', p_tool_use_id, v_use.tool_name,
              jsonb_strip_nulls(jsonb_build_object(
                'verdict', v_verdict, 'decision', v_gate.decision, 'decided_by', v_gate.actor, 'note', v_gate.note,
                'decided_at', v_gate.decided_at, 'requested_arguments', v_args,
                'arguments', case when v_verdict in ('approved', 'edited') then v_run_args end,
                'message', v_gate.payload ->> 'message')),
              'completed', p_attempt_id, v_now, v_now)
      on conflict on constraint block_is_unique do nothing;
    end if;
    if v_verdict in ('deny', 'rejected', 'answered') then
      v_block := jsonb_build_object('type', 'tool_result', 'tool_use_id', p_tool_use_id,
        'content', case v_verdict
                     when 'deny' then format('The tool call was not run: the tool policy of this workspace denies %s%s.',
                                             v_use.tool_name, case when v_pol.condition is not null then ' with these arguments' else '' end)
                     when 'answered' then v_gate.payload ->> 'message'
                     else format('The tool call was not run: the approver rejected it%s.',
                                 coalesce(': ' || nullif(v_gate.note, ''), '')) end)
        || case when v_verdict = 'answered' and v_gate.decision = 'approve' then '{}'::jsonb
                else '{"is_error": true}'::jsonb end;
      insert into pgflight.traces (agent_run_id, iteration, seq, role, block_type, tool_use_id, tool_name, content,
                                   status, attempt_id, created_at, updated_at)
      values (v_run.id, v_use.iteration, pgflight._seq_band_tool_results() + v_use.seq, 'user', 'tool_result', p_tool_use_id, v_use.tool_name,
              v_block, 'completed', p_attempt_id, v_now, v_now)
      returning id into v_id;
      return query select v_id, 'completed'::text, v_block, v_verdict, null::jsonb;
      return;
    end if;
  elsif v_res.status <> 'completed' then
    -- a resumed call runs with the arguments it was approved with
    select g.* into v_gate from pgflight.approvals g
     where g.step_id = v_run.step_id and g.gate_key = 'tool:' || p_tool_use_id;
    if v_gate.decision = 'approve' and v_gate.payload ? 'arguments' then
      v_run_args := v_gate.payload -> 'arguments';
      v_verdict := case when v_run_args <> v_args then 'edited' else 'approved' end;
    end if;
  end if;
  insert into pgflight.traces (agent_run_id, iteration, seq, role, block_type, tool_use_id, tool_name, content,
                               status, attempt_id, created_at, updated_at)
  values (v_run.id, v_use.iteration, pgflight._seq_band_tool_results() + v_use.seq, 'user', 'tool_result', p_tool_use_id, v_use.tool_name,
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
    return query select v_id, 'new'::text, null::jsonb, v_verdict, v_run_args;
    return;
  end if;
  select t.* into v_res from pgflight.traces t
   where t.agent_run_id = v_run.id and t.iteration = v_use.iteration and t.seq = pgflight._seq_band_tool_results() + v_use.seq;
  if v_res.status = 'interrupted' then
    update pgflight.traces t set status = 'in_flight', attempt_id = p_attempt_id, updated_at = v_now
     where t.agent_run_id = v_run.id and t.iteration = v_use.iteration and t.seq = pgflight._seq_band_tool_results() + v_use.seq;
  end if;
  return query select v_res.id, v_res.status, v_res.content, v_verdict,
                      case when v_res.status = 'completed' then null else v_run_args end;
end
$$;

COMMENT ON FUNCTION pgflight.mark_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text) IS 'Mark a tool call in flight before it runs, after the workspace''s tool policy: returns its previous status, the policy verdict (allow | deny | approval_required | approved | edited | rejected | answered) and the arguments to run it with. Errors: ZF007, ZF003, ZF001, ZF002.';

REVOKE ALL ON FUNCTION pgflight.mark_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.mark_tool_call(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_tool_use_id text) TO pgflight_worker;

commit;
