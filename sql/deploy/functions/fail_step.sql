-- Deploy pgflight:functions/fail_step

begin;

set local role pgflight_owner;

-- Fail an attempt this caller holds. p_error: JSON describing the error (kept on the attempt and
-- on the dead letter). options: retryable (boolean, default true; false dead-letters at once),
-- retry_after_s (seconds, 0 to 2592000; replaces the backoff, still consumes an attempt, so the
-- ceiling holds on this path too: C07). Unknown keys are refused (docs/options.md). Returns outcome retry (with the next attempt id and when it becomes
-- claimable), dead_letter, or cancelled (the run had ended).
-- Errors: ZF001 lease lost, ZF002 cancelled, ZF003 unknown attempt, 22023 bad options, ZF005 error
-- over settings.max_error_bytes or nested deeper than settings.max_json_depth.
CREATE OR REPLACE FUNCTION pgflight.fail_step(p_attempt_id bigint, p_token bigint, p_error jsonb, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(attempt_id bigint, outcome text, next_attempt_id bigint, available_after timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_status text;
  v_opts jsonb := pgflight._check_options('fail_step', p_options);
  v_retryable boolean := coalesce((v_opts ->> 'retryable')::boolean, true);
  v_after double precision := (v_opts ->> 'retry_after_s')::double precision;
begin
  -- Lock order (docs/locking.md): when this failure ends the step, what its end may cancel (the
  -- subtree of a fail-fast ancestor still waiting for its children, or its own children) is locked
  -- now, with this attempt, deepest first then id, before any steps row: never after the parent's
  -- row. _lock_subtree also locks attempts committed while it waited (a sibling's retry), and waits
  -- for one another transaction holds with nothing locked. A step with neither locks nothing here.
  if exists (select from pgflight.step_attempts a join pgflight.steps s on s.id = a.step_id
              where a.id = p_attempt_id and a.fencing_token = p_token and a.status in ('claimed', 'running')
                and (not v_retryable or s.failed_attempts + 1 >= s.max_attempts)) then
    perform pgflight._lock_cascade(p_attempt_id, false);
  end if;
  -- the error is capped (ZF005, nothing written)
  perform pgflight._require_cap('max_error_bytes', (select s.max_error_bytes from pgflight.settings s),
                                octet_length(p_error::text), 'error (bytes)');
  perform pgflight._require_json_depth(p_error, 'error');
  v_status := (pgflight._lock_held(p_attempt_id, p_token, 'fail_step')).status;
  return query
    select p_attempt_id, f.outcome, f.next_attempt_id, f.available_after
      from pgflight._fail_attempt(p_attempt_id, v_status, 'failed',
                                  coalesce(p_error, '{"message": "failed"}'), v_retryable, v_after,
                                  'failed') f;
end
$$;

COMMENT ON FUNCTION pgflight.fail_step(p_attempt_id bigint, p_token bigint, p_error jsonb, p_options jsonb) IS 'Fail a held attempt: retry with backoff or dead letter at the ceiling. Options (docs/options.md): retryable (boolean, default true), retry_after_s (seconds, 0 to 2592000). Errors: ZF001, ZF002, ZF003, ZF005, ZF012, 22023.';

REVOKE ALL ON FUNCTION pgflight.fail_step(p_attempt_id bigint, p_token bigint, p_error jsonb, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.fail_step(p_attempt_id bigint, p_token bigint, p_error jsonb, p_options jsonb) TO pgflight_worker;

commit;
