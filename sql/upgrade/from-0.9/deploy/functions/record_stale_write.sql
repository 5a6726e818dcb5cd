-- Deploy pgflight:functions/record_stale_write
begin;
set local role pgflight_owner;

-- A write raised ZF001 or ZF002 and so changed nothing, not even the log: a worker calls this
-- afterwards, in its own transaction, so the refusal is on record (C02). Returns true when the
-- event was written; false when the token is in fact current (nothing to record).
-- Issue 13: only the login whose worker held the attempt may log against it (ZF012 otherwise),
-- the operation name is capped (max_name_bytes) and so are the records per attempt
-- (max_stale_writes_per_attempt; ZF005 past it). The fence's rule (internals/_fencing): a NULL
-- attempt id or token is 22023; an attempt outside the login's worker lanes answers false, as an
-- unknown one does.
create or replace function pgflight.record_stale_write(p_attempt_id bigint, p_token bigint, p_operation text)
returns boolean
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_att record;
  v_settings pgflight.settings;
begin
  if p_attempt_id is null or p_token is null then
    perform pgflight._null_refused('record_stale_write', case when p_attempt_id is null then 'the attempt id'
                                                              else 'the fencing token' end);
  end if;
  select * into v_settings from pgflight.settings;
  perform pgflight._require_cap('max_name_bytes', v_settings.max_name_bytes, octet_length(p_operation),
                                'operation (bytes)');
  select a.id, a.run_id, w.login,
         w.login is not distinct from session_user or pgflight._may('worker', a.workspace_id) as visible
    into v_att
    from pgflight.step_attempts a left join pgflight.workers w on w.id = a.worker_id where a.id = p_attempt_id;
  if not found or not v_att.visible then
    return false;  -- an unknown attempt, or one outside the login's worker lanes: nothing to record
  end if;
  if v_att.login is distinct from session_user then
    raise exception using
      errcode = 'ZF012',
      message = format('record_stale_write refused: attempt %s is not held by a worker of login %s',
                       p_attempt_id, session_user),
      hint    = 'Log only refusals of writes to attempts your own claim_batch returned.';
  end if;
  perform pgflight._require_cap('max_stale_writes_per_attempt', v_settings.max_stale_writes_per_attempt,
                                (select count(*) + 1 from pgflight.events e
                                  where e.run_id = v_att.run_id and e.attempt_id = p_attempt_id
                                    and e.reason = 'stale_result_rejected'),
                                format('stale-write records of attempt %s', p_attempt_id));
  return pgflight._record_stale(p_attempt_id, p_token, coalesce(p_operation, 'unknown'));
end
$$;
comment on function pgflight.record_stale_write(bigint, bigint, text) is
  'Log a refused (stale) worker write of this login as a stale_result_rejected event; true when logged. '
  'Errors: 22023 a NULL attempt id or token, ZF005 over max_stale_writes_per_attempt, ZF012 another login''s attempt.';
grant execute on function pgflight.record_stale_write(bigint, bigint, text) to pgflight_worker;

commit;
