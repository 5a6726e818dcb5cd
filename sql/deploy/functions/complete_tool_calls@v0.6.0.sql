-- Deploy pgflight:functions/complete_tool_calls
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
-- When record_model_call already reserved the next call (its p_next_est_usd), the reservation is
-- kept as it is (p_est_usd is not added to it); only the wall-time caps are checked again. Without
-- p_next_iteration that reservation is given back: the client is not about to make the call (it
-- stores what its tools did before it parks the attempt, e.g. to wait for sub-agents, or fails),
-- and money held while the attempt waits would be kept from the agent's sub-agents.
-- Returns: stored (tool_use ids stored now), reserved, reserved_usd.
-- Errors: ZF003 no such tool_use (nothing stored), ZF001, ZF002 (fence), 22023 malformed results,
-- iteration < 1 or est_usd < 0.
create or replace function pgflight.complete_tool_calls(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint,
                                             p_results jsonb, p_next_iteration integer default null,
                                             p_est_usd numeric default null)
returns table (agent_run_id bigint, stored text[], reserved boolean, reserved_usd numeric, refusal jsonb)
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := pgflight._now();
  v_run pgflight.agent_runs;
  v_stored text[];
  v_refusal jsonb;
begin
  -- bounded, so the budgets' numeric(16, 8) cannot overflow (issue 14); _check_arg raises (issue 18:
  -- called only for a value out of range, the call cost more than the check)
  if p_est_usd is not null and not (p_est_usd >= 0 and p_est_usd <= 1000000) then
    perform pgflight._check_arg('est_usd', p_est_usd, 0, 1000000);
  end if;
  if p_next_iteration is not null and (p_next_iteration < 1 or p_est_usd is null or p_est_usd < 0) then
    raise exception using errcode = '22023', message = 'next iteration must be >= 1 and est_usd >= 0',
      detail = format('next iteration %s, est_usd %s', p_next_iteration, p_est_usd);
  end if;
  v_run := pgflight._agent_fence(p_attempt_id, p_token, p_agent_run_id, 'complete_tool_calls');
  v_stored := pgflight._store_tool_results(v_run.id, p_attempt_id, p_results, v_now);
  if p_next_iteration is null then
    if v_run.reserved_attempt_id = p_attempt_id and v_run.reserved_iteration is not null then
      perform pgflight._release_reservation(v_run.id);
    end if;
    return query select v_run.id, v_stored, false, 0::numeric, null::jsonb;
    return;
  end if;
  if v_run.reserved_attempt_id = p_attempt_id and v_run.reserved_iteration = p_next_iteration then
    -- admitted by record_model_call before the tools ran: kept (no call to _reserve, no budget
    -- move) unless a wall-time cap of its budgets ran out meanwhile (read without locks: wall time
    -- only grows); then it is given back and the call admitted anew, which refuses it
    if exists (select from pgflight.budgets b
                where b.id = any (v_run.reserved_budget_ids) and b.max_wall_s is not null
                  and v_now > b.started_at + make_interval(secs => b.max_wall_s)) then
      perform pgflight._release_reservation(v_run.id);
      v_run.reserved_usd := 0;
      v_run.reserved_attempt_id := null;
      v_run.reserved_iteration := null;
      v_run.reserved_budget_ids := null;
      v_refusal := pgflight._reserve(v_run, p_attempt_id, p_next_iteration, p_est_usd, v_now);
    end if;
  else
    v_refusal := pgflight._reserve(v_run, p_attempt_id, p_next_iteration, p_est_usd, v_now);
  end if;
  return query select v_run.id, v_stored, v_refusal is null,
                      case when v_refusal is not null then 0
                           when v_run.reserved_attempt_id = p_attempt_id and v_run.reserved_iteration = p_next_iteration
                             then v_run.reserved_usd  -- kept since record_model_call
                           else p_est_usd end, v_refusal;
end
$$;
comment on function pgflight.complete_tool_calls(bigint, bigint, bigint, jsonb, integer, numeric) is
  'Store an iteration''s tool results and admit the next model call, in one transaction; a refused '
  'admission is returned (reserved = false, refusal), not raised. Errors: ZF003, ZF001, ZF002, 22023.';
grant execute on function pgflight.complete_tool_calls(bigint, bigint, bigint, jsonb, integer, numeric) to pgflight_worker;

commit;
