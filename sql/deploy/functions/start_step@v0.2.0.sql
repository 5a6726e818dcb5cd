-- Deploy pgflight:functions/start_step
begin;
set local role pgflight_owner;

-- claimed -> running for an attempt this caller holds. Idempotent for the holder (a second call
-- with the same token returns the same started_at). Errors: ZF001 lease lost, ZF002 cancelled,
-- ZF003 unknown attempt.
create or replace function pgflight.start_step(p_attempt_id bigint, p_token bigint)
returns table (attempt_id bigint, started_at timestamptz, lease_expires_at timestamptz)
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_now timestamptz := pgflight._now();
  v_row record;
begin
  update pgflight.step_attempts a
     set status = 'running', started_at = v_now
   where a.id = p_attempt_id and a.fencing_token = p_token and a.status = 'claimed'
  returning a.id, a.run_id, a.step_id, a.worker_id, a.started_at, a.lease_expires_at into v_row;
  if found then
    perform pgflight._event(v_row.run_id, v_row.step_id, v_row.id, 'claimed', 'running', v_row.worker_id, 'started');
    return query select v_row.id, v_row.started_at, v_row.lease_expires_at;
    return;
  end if;
  return query select a.id, a.started_at, a.lease_expires_at from pgflight.step_attempts a
    where a.id = p_attempt_id and a.fencing_token = p_token and a.status = 'running';
  if not found then
    perform pgflight._reject_write(p_attempt_id, p_token, 'start_step');
  end if;
end
$$;
comment on function pgflight.start_step(bigint, bigint) is
  'claimed -> running. Errors: ZF001 lease lost, ZF002 cancelled, ZF003 unknown attempt.';
grant execute on function pgflight.start_step(bigint, bigint) to pgflight_worker;

commit;
