-- Deploy pgflight:internals/_fail_attempt

begin;

set local role pgflight_owner;

-- End a leased attempt unsuccessfully and decide what follows: a new queued attempt after the
-- backoff, or the dead letter at the ceiling (or at once when not retryable). Used by fail_step,
-- the reclaim sweep (lease_expired) and the deadline sweep (timed_out), so the ceiling is
-- enforced identically on every path (C07). The caller holds the attempt's row lock.
CREATE OR REPLACE FUNCTION pgflight._fail_attempt(p_attempt_id bigint, p_from text, p_status text, p_error jsonb, p_retryable boolean, p_retry_after_s double precision, p_reason text, p_actor text DEFAULT NULL::text) RETURNS TABLE(outcome text, next_attempt_id bigint, available_after timestamp with time zone)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_step record;
  v_att record;
  v_run_status text;
  v_delay double precision;
  v_next bigint;
  v_at timestamptz;
begin
  select a.id, a.step_id, a.run_id, a.worker_id, a.recipe, a.priority into v_att
    from pgflight.step_attempts a where a.id = p_attempt_id;
  select s.* into v_step from pgflight.steps s where s.id = v_att.step_id for update;
  select r.status into v_run_status from pgflight.runs r where r.id = v_att.run_id;

  if v_run_status <> 'running' then
    -- C18: never requeue under a terminal run.
    update pgflight.step_attempts
       set status = 'cancelled', finished_at = v_now, error = p_error, reason = p_reason
     where id = p_attempt_id;
    perform pgflight._event(v_att.run_id, v_att.step_id, p_attempt_id, p_from, 'cancelled', v_att.worker_id,
                            'cancelled', p_actor, jsonb_build_object('cause', p_reason, 'run_status', v_run_status));
    perform pgflight._step_finished(v_att.step_id, 'cancelled', p_actor);
    return query select 'cancelled'::text, null::bigint, null::timestamptz;
    return;
  end if;

  update pgflight.steps set failed_attempts = failed_attempts + 1 where id = v_step.id;

  if not p_retryable or v_step.failed_attempts + 1 >= v_step.max_attempts then
    update pgflight.step_attempts
       set status = 'dead_letter', finished_at = v_now, error = p_error, reason = p_reason
     where id = p_attempt_id;
    perform pgflight._event(v_att.run_id, v_att.step_id, p_attempt_id, p_from, 'dead_letter', v_att.worker_id,
                            p_reason, p_actor,
                            jsonb_build_object('failed_attempts', v_step.failed_attempts + 1,
                                               'max_attempts', v_step.max_attempts, 'retryable', p_retryable));
    perform pgflight._step_finished(v_att.step_id, 'dead_letter', p_actor);
    return query select 'dead_letter'::text, null::bigint, null::timestamptz;
    return;
  end if;

  update pgflight.step_attempts
     set status = p_status, finished_at = v_now, error = p_error, reason = p_reason
   where id = p_attempt_id;
  perform pgflight._event(v_att.run_id, v_att.step_id, p_attempt_id, p_from, p_status, v_att.worker_id,
                          p_reason, p_actor);

  -- clamped to [0, 30 days] whatever was stored or passed: this runs inside a
  -- sweep and a claim, where a raise would stop every other row
  v_delay := least(greatest(coalesce(p_retry_after_s, pgflight._backoff_s(v_step.failed_attempts + 1, v_step.backoff), 0), 0),
                   pgflight._limit('delay_s'));
  v_at := v_now + make_interval(secs => v_delay);
  insert into pgflight.step_attempts (step_id, run_id, attempt_no, recipe, priority, status, available_after, created_at)
  values (v_step.id, v_att.run_id, v_step.last_attempt_no + 1, v_att.recipe, v_att.priority, 'queued', v_at, v_now)
  returning id into v_next;
  update pgflight.steps set last_attempt_no = v_step.last_attempt_no + 1 where id = v_step.id;
  perform pgflight._event(v_att.run_id, v_att.step_id, v_next, null, 'queued', null, 'retry_scheduled', p_actor,
                          jsonb_build_object('delay_s', round(v_delay::numeric, 3), 'attempt_no', v_step.last_attempt_no + 1));
  if v_delay <= 0 then
    perform pgflight._notify_ready();
  end if;
  return query select 'retry'::text, v_next, v_at;
end
$$;

COMMENT ON FUNCTION pgflight._fail_attempt(p_attempt_id bigint, p_from text, p_status text, p_error jsonb, p_retryable boolean, p_retry_after_s double precision, p_reason text, p_actor text) IS 'Internal: end an attempt unsuccessfully; returns outcome retry (with the next attempt and when it becomes claimable), dead_letter or cancelled (the run had already ended).';

REVOKE ALL ON FUNCTION pgflight._fail_attempt(p_attempt_id bigint, p_from text, p_status text, p_error jsonb, p_retryable boolean, p_retry_after_s double precision, p_reason text, p_actor text) FROM PUBLIC;

commit;
