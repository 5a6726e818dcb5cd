-- Deploy pgflight:internals/_reserve

begin;

set local role pgflight_owner;

-- Admission of model call p_iteration of the agent run p_run (fenced and locked by the caller):
-- releases a reservation of another attempt or iteration, checks the iteration cap, the
-- workspace's model tokens per minute (ZF013 refusal with retry_after_s) and the wall-time and
-- USD caps of every budget that binds the call, reserves p_est_usd (USD) on them and records the
-- reservation on the agent run. A reservation already held for (p_attempt_id, p_iteration) is
-- kept. Returns null when admitted, else the refusal (nothing reserved; the caller raises it with
-- _raise_budget_exceeded or hands it to the client). The admission is made just before the call's
-- request leaves, so the reservation is marked reserved_call_out (see _release_reservation).
-- reserved_attempt_id is kept when a
-- reservation ends (tables/agent_runs_hot): it changes once per attempt, so iterations are HOT.
CREATE OR REPLACE FUNCTION pgflight._reserve(p_run pgflight.agent_runs, p_attempt_id bigint, p_iteration integer, p_est_usd numeric, p_now timestamp with time zone) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ids bigint[];
  v_refusal jsonb;
  v_tokens_per_min bigint;
begin
  if p_run.reserved_attempt_id = p_attempt_id and p_run.reserved_iteration = p_iteration then
    if not p_run.reserved_call_out then
      update pgflight.agent_runs set reserved_call_out = true where id = p_run.id;
    end if;
    return null;
  end if;
  if p_run.reserved_iteration is not null then
    perform pgflight._move_budget(p_run.reserved_budget_ids, 0, 0, p_run.reserved_usd, false, p_now, 'release');
  end if;
  if p_iteration > p_run.max_iterations then
    v_refusal := pgflight._iteration_refusal(p_run, p_iteration);
  else
    select l.model_tokens_per_min into v_tokens_per_min
      from pgflight.workspace_limits l where l.workspace_id = p_run.workspace_id;
    if v_tokens_per_min is not null then
      v_refusal := pgflight._token_admission(p_run, v_tokens_per_min, p_now);
    end if;
  end if;
  if v_refusal is null then
    v_ids := pgflight._call_budget_ids(p_run, p_now);
    v_refusal := pgflight._move_budget(v_ids, p_est_usd, 0, 0, true, p_now,
                                       format('agent_run=%s iteration=%s', p_run.id, p_iteration));
  end if;
  if v_refusal is null then
    update pgflight.agent_runs
       set reserved_usd = p_est_usd, reserved_attempt_id = p_attempt_id, reserved_iteration = p_iteration,
           reserved_budget_ids = v_ids, reserved_call_out = true, updated_at = p_now
     where id = p_run.id;
  elsif p_run.reserved_iteration is not null then
    update pgflight.agent_runs
       set reserved_usd = 0, reserved_iteration = null, reserved_budget_ids = null, reserved_call_out = false,
           updated_at = p_now
     where id = p_run.id;
  end if;
  return v_refusal;
end
$$;

COMMENT ON FUNCTION pgflight._reserve(p_run pgflight.agent_runs, p_attempt_id bigint, p_iteration integer, p_est_usd numeric, p_now timestamp with time zone) IS 'Internal: admission of a model call (caps and model tokens per minute checked, est USD reserved); returns null or the refusal.';

REVOKE ALL ON FUNCTION pgflight._reserve(p_run pgflight.agent_runs, p_attempt_id bigint, p_iteration integer, p_est_usd numeric, p_now timestamp with time zone) FROM PUBLIC;

commit;
