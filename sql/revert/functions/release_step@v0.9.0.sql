-- Revert pgflight:functions/release_step@v0.9.0: restores the previous definition, deploy/functions/release_step@v0.2.0.sql (written by scripts/gen_sql_scripts.py)
begin;
set local role pgflight_owner;

-- Give a held attempt back (graceful shutdown): it returns to queued at once, no attempt spent
-- (documented: release is the one unsuccessful ending that does not count toward max_attempts;
-- a worker that is killed instead is charged through lease expiry). On an attempt whose run was
-- cancelled it acknowledges the cancel: the attempt becomes cancelled.
-- Returns the new status (queued or cancelled). Errors: ZF001 lease lost, ZF003 unknown attempt.
create or replace function pgflight.release_step(p_attempt_id bigint, p_token bigint, p_reason text default 'released')
returns table (attempt_id bigint, status text)
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_row pgflight.step_attempts;
  v_now timestamptz := pgflight._now();
begin
  v_row := pgflight._lock_held(p_attempt_id, p_token, 'release_step', true);
  if v_row.status = 'cancel_requested' then
    update pgflight.step_attempts set status = 'cancelled', finished_at = v_now where id = p_attempt_id;
    perform pgflight._event(v_row.run_id, v_row.step_id, p_attempt_id, 'cancel_requested', 'cancelled',
                            v_row.worker_id, 'cancelled', null, jsonb_build_object('note', p_reason));
    perform pgflight._step_finished(v_row.step_id, 'cancelled');
    return query select p_attempt_id, 'cancelled'::text;
    return;
  end if;
  update pgflight.step_attempts set status = 'queued', available_after = v_now where id = p_attempt_id;
  perform pgflight._event(v_row.run_id, v_row.step_id, p_attempt_id, v_row.status, 'queued',
                          v_row.worker_id, 'released', null,
                          case when p_reason is null then null else jsonb_build_object('note', p_reason) end);
  perform pgflight._notify_ready();
  return query select p_attempt_id, 'queued'::text;
end
$$;
comment on function pgflight.release_step(bigint, bigint, text) is
  'Return a held attempt to queued (no attempt spent), or acknowledge a cancel. Errors: ZF001, ZF003.';
grant execute on function pgflight.release_step(bigint, bigint, text) to pgflight_worker;

commit;
