-- Deploy pgflight:functions/fail_step
begin;
set local role pgflight_owner;

-- Fail an attempt this caller holds. p_error: JSON describing the error (kept on the attempt and
-- on the dead letter). options: retryable (boolean, default true; false dead-letters at once),
-- retry_after_s (seconds; replaces the backoff, still consumes an attempt, so the ceiling holds
-- on this path too: C07). Returns outcome retry (with the next attempt id and when it becomes
-- claimable), dead_letter, or cancelled (the run had ended).
-- Errors: ZF001 lease lost, ZF002 cancelled, ZF003 unknown attempt, 22023 bad options.
create or replace function pgflight.fail_step(p_attempt_id bigint, p_token bigint, p_error jsonb, p_options jsonb default '{}')
returns table (attempt_id bigint, outcome text, next_attempt_id bigint, available_after timestamptz)
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_status text;
  v_retryable boolean := true;
  v_after double precision;
begin
  if p_options ? 'retryable' then
    if jsonb_typeof(p_options -> 'retryable') <> 'boolean' then
      raise exception using errcode = '22023', message = 'option retryable must be a boolean';
    end if;
    v_retryable := (p_options ->> 'retryable')::boolean;
  end if;
  v_after := pgflight._opt_num(p_options, 'retry_after_s', null);
  if v_after < 0 then
    raise exception using errcode = '22023', message = 'retry_after_s must not be negative';
  end if;
  v_status := (pgflight._lock_held(p_attempt_id, p_token, 'fail_step')).status;
  return query
    select p_attempt_id, f.outcome, f.next_attempt_id, f.available_after
      from pgflight._fail_attempt(p_attempt_id, v_status, 'failed',
                                  coalesce(p_error, '{"message": "failed"}'), v_retryable, v_after,
                                  'failed') f;
end
$$;
comment on function pgflight.fail_step(bigint, bigint, jsonb, jsonb) is
  'Fail a held attempt: retry with backoff or dead letter at the ceiling. Errors: ZF001, ZF002, ZF003, 22023.';
grant execute on function pgflight.fail_step(bigint, bigint, jsonb, jsonb) to pgflight_worker;

commit;
