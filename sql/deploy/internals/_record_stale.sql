-- Deploy pgflight:internals/_record_stale

begin;

set local role pgflight_owner;

-- Append a stale_result_rejected event for a write that was refused. Internal form used by the
-- batch functions; it writes nothing when the token is in fact current and owned, when the
-- attempt's worker belongs to another login, or past settings.max_stale_writes_per_attempt
-- (no login can flood another's log). The event keeps the caller's token only.
CREATE OR REPLACE FUNCTION pgflight._record_stale(p_attempt_id bigint, p_token bigint, p_operation text) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_att record;
begin
  select a.id, a.run_id, a.step_id, a.status, a.fencing_token, a.worker_id, w.login into v_att
    from pgflight.step_attempts a left join pgflight.workers w on w.id = a.worker_id
   where a.id = p_attempt_id;
  if not found or (v_att.fencing_token is not distinct from p_token and v_att.status in ('claimed', 'running'))
     or v_att.login is distinct from session_user
     or (select count(*) from pgflight.events e
          where e.run_id = v_att.run_id and e.attempt_id = v_att.id and e.reason = 'stale_result_rejected')
        >= (select s.max_stale_writes_per_attempt from pgflight.settings s) then
    return false;
  end if;
  perform pgflight._event(v_att.run_id, v_att.step_id, v_att.id, v_att.status, v_att.status, null,
                          'stale_result_rejected', null,
                          jsonb_build_object('operation', p_operation, 'caller_token', p_token));
  return true;
end
$$;

COMMENT ON FUNCTION pgflight._record_stale(p_attempt_id bigint, p_token bigint, p_operation text) IS 'Internal: log a refused write as stale_result_rejected; false when the token is still current.';

REVOKE ALL ON FUNCTION pgflight._record_stale(p_attempt_id bigint, p_token bigint, p_operation text) FROM PUBLIC;

commit;
