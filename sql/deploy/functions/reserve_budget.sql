-- Deploy pgflight:functions/reserve_budget

begin;

set local role pgflight_owner;

-- Admission before a model call (C24). Checks the agent's iteration cap and the wall-time caps of
-- its trees, then reserves p_est_usd (USD: the most this call is expected to cost) on every budget
-- that binds it: the run, each capped ancestor agent, the agent itself and the workspace's day.
-- Each budget row is checked and moved under its row lock (taken in id order), so of N concurrent
-- callers exactly as many are admitted as fit. record_model_call replaces
-- the reservation by the actual cost; enforce_budgets releases the reservation of a lapsed attempt.
-- Idempotent per (attempt, iteration): a second call returns the reservation already held; a
-- reservation of an earlier attempt or iteration is released first. The agent loop folds this
-- admission into complete_tool_calls (the results of iteration n and the admission of n + 1 in
-- one transaction); this standalone form serves the first call of an attempt.
-- Errors: ZF007 a cap would be crossed (DETAIL: scope, cap, figures), ZF001, ZF002, ZF003, 22023.
CREATE OR REPLACE FUNCTION pgflight.reserve_budget(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_est_usd numeric) RETURNS TABLE(agent_run_id bigint, iteration integer, reserved_usd numeric, budget_ids bigint[])
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_run pgflight.agent_runs;
  v_refusal jsonb;
begin
  if p_est_usd is not null then  -- bounded, so the budgets' numeric(16, 8) cannot overflow
    perform pgflight._check_arg('est_usd', p_est_usd, 0, 1000000);
  end if;
  if p_est_usd is null or p_est_usd < 0 or p_iteration is null or p_iteration < 1 then
    raise exception using errcode = '22023', message = 'iteration must be >= 1 and est_usd >= 0',
      detail = format('iteration %s, est_usd %s', p_iteration, p_est_usd);
  end if;
  v_run := pgflight._agent_fence(p_attempt_id, p_token, p_agent_run_id, 'reserve_budget');
  if v_run.reserved_attempt_id = p_attempt_id and v_run.reserved_iteration = p_iteration then
    return query select v_run.id, p_iteration, v_run.reserved_usd, v_run.reserved_budget_ids;
    return;
  end if;
  v_refusal := pgflight._reserve(v_run, p_attempt_id, p_iteration, p_est_usd, v_now);
  if v_refusal is not null then
    perform pgflight._raise_budget_exceeded(v_refusal);
  end if;
  return query select r.id, p_iteration, r.reserved_usd, r.reserved_budget_ids
                 from pgflight.agent_runs r where r.id = v_run.id;
end
$$;

COMMENT ON FUNCTION pgflight.reserve_budget(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_est_usd numeric) IS 'Admission before a model call: check caps and reserve est USD atomically. Errors: ZF007, ZF001, ZF002, ZF003, 22023.';

REVOKE ALL ON FUNCTION pgflight.reserve_budget(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_est_usd numeric) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.reserve_budget(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_iteration integer, p_est_usd numeric) TO pgflight_worker;

commit;
