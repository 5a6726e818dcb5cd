-- Deploy pgflight:functions/record_stale_write
-- requires: functions/_internals
begin;
set local role pgflight_owner;

-- Append a stale_result_rejected event for a write that was refused. Internal form used by the
-- batch functions; it writes nothing when the token is in fact current and owned.
create function pgflight._record_stale(p_attempt_id bigint, p_token bigint, p_operation text)
returns boolean
language plpgsql volatile
set search_path = ''
as $$
declare
  v_att record;
begin
  select a.id, a.run_id, a.step_id, a.status, a.fencing_token, a.worker_id into v_att
    from pgflight.step_attempts a where a.id = p_attempt_id;
  if not found or (v_att.fencing_token is not distinct from p_token and v_att.status in ('claimed', 'running')) then
    return false;
  end if;
  perform pgflight._event(v_att.run_id, v_att.step_id, v_att.id, v_att.status, v_att.status, null,
                          'stale_result_rejected', null,
                          jsonb_build_object('operation', p_operation, 'caller_token', p_token,
                                             'current_token', v_att.fencing_token));
  return true;
end
$$;
comment on function pgflight._record_stale(bigint, bigint, text) is
  'Internal: log a refused write as stale_result_rejected; false when the token is still current.';

-- A write raised ZF001 or ZF002 and so changed nothing, not even the log: a worker calls this
-- afterwards, in its own transaction, so the refusal is on record (C02). Returns true when the
-- event was written; false when the token is in fact current (nothing to record).
create function pgflight.record_stale_write(p_attempt_id bigint, p_token bigint, p_operation text)
returns boolean
language sql volatile security definer
set search_path = ''
as $$ select pgflight._record_stale(p_attempt_id, p_token, coalesce(p_operation, 'unknown')) $$;
comment on function pgflight.record_stale_write(bigint, bigint, text) is
  'Log a refused (stale) worker write as a stale_result_rejected event; true when logged.';
grant execute on function pgflight.record_stale_write(bigint, bigint, text) to pgflight_worker;

commit;
