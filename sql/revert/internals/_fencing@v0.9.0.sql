-- Revert pgflight:internals/_fencing@v0.9.0: restores the previous definition, deploy/internals/_fencing@v0.2.0.sql (written by scripts/gen_sql_scripts.py)
-- Defines: _reject_write(), _lock_held(), _record_stale().
-- The fence every write by a worker passes: lock the attempt held with this token, or reject and log the stale write.
-- None is granted to any role.
begin;
set local role pgflight_owner;

-- Raise the right error for a worker write that did not match a live, owned attempt:
-- ZF002 when the attempt was cancelled, ZF001 (lease lost) otherwise, ZF003 when unknown.
create or replace function pgflight._reject_write(p_attempt_id bigint, p_token bigint, p_operation text)
returns void
language plpgsql stable
set search_path = ''
as $$
declare
  v_status text;
  v_token bigint;
begin
  select a.status, a.fencing_token into v_status, v_token
    from pgflight.step_attempts a where a.id = p_attempt_id;
  if not found then
    raise exception using
      errcode = 'ZF003',
      message = format('unknown attempt %s', p_attempt_id),
      hint    = 'Use the attempt_id returned by claim_batch.';
  elsif v_status in ('cancel_requested', 'cancelled') and v_token is not distinct from p_token then
    raise exception using
      errcode = 'ZF002',
      message = format('%s rejected: attempt %s was cancelled', p_operation, p_attempt_id),
      detail  = format('attempt status %s', v_status),
      hint    = 'The run or step was cancelled; stop the work and call release_step to acknowledge.';
  else
    raise exception using
      errcode = 'ZF001',
      message = format('lease lost on attempt %s', p_attempt_id),
      detail  = format('%s refused: attempt status %s, current token %s, caller token %s',
                       p_operation, v_status, coalesce(v_token::text, 'none'), coalesce(p_token::text, 'none')),
      hint    = 'The step was reclaimed or finished; abandon this attempt and write nothing.';
  end if;
end
$$;
comment on function pgflight._reject_write(bigint, bigint, text) is
  'Internal: raises ZF001 (lease lost), ZF002 (cancelled) or ZF003 (unknown attempt).';

-- Lock the attempt a worker write is about: it must be live and held with this fencing token
-- (claimed or running; also cancel_requested when p_with_cancel_requested, for the writes that
-- acknowledge a cancel). Returns the locked row; otherwise raises as _reject_write does. Every
-- fenced write starts here, so the fencing rule is written once.
create or replace function pgflight._lock_held(p_attempt_id bigint, p_token bigint, p_operation text,
                                    p_with_cancel_requested boolean default false)
returns pgflight.step_attempts
language plpgsql volatile
set search_path = ''
as $$
declare
  v_row pgflight.step_attempts;
begin
  select a.* into v_row from pgflight.step_attempts a
   where a.id = p_attempt_id and a.fencing_token = p_token
     and (a.status in ('claimed', 'running') or (p_with_cancel_requested and a.status = 'cancel_requested'))
     for update;
  if not found then
    perform pgflight._reject_write(p_attempt_id, p_token, p_operation);
  end if;
  return v_row;
end
$$;
comment on function pgflight._lock_held(bigint, bigint, text, boolean) is
  'Internal: lock a live attempt held with this token, or raise ZF001 / ZF002 / ZF003.';

-- Append a stale_result_rejected event for a write that was refused. Internal form used by the
-- batch functions; it writes nothing when the token is in fact current and owned.
create or replace function pgflight._record_stale(p_attempt_id bigint, p_token bigint, p_operation text)
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

commit;
