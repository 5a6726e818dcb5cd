-- Revert pgflight:functions/complete_tool_calls@v0.4.0: restores the previous definition, deploy/functions/complete_tool_calls@v0.2.0.sql (written by scripts/gen_sql_scripts.py)
begin;
set local role pgflight_owner;

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
create or replace function pgflight.complete_tool_calls(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint,
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
grant execute on function pgflight.complete_tool_calls(bigint, bigint, bigint, jsonb, integer, numeric) to pgflight_worker;

commit;
