-- Deploy pgflight:internals/_lock_held

begin;

set local role pgflight_owner;

-- Lock the attempt a worker write is about: it must be live and held with this fencing token
-- (claimed or running; also cancel_requested when p_with_cancel_requested, for the writes that
-- acknowledge a cancel) by a worker of the calling login (a token is useless to anyone else).
-- Returns the locked row; otherwise _reject_write raises (the fence's rule, above). A NULL id or
-- token matches no row (= is never true for a NULL), so it reaches _reject_write's 22023.
CREATE OR REPLACE FUNCTION pgflight._lock_held(p_attempt_id bigint, p_token bigint, p_operation text, p_with_cancel_requested boolean DEFAULT false) RETURNS pgflight.step_attempts
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_row pgflight.step_attempts;
begin
  select a.* into v_row from pgflight.step_attempts a
   where a.id = p_attempt_id and a.fencing_token = p_token
     and (a.status in ('claimed', 'running') or (p_with_cancel_requested and a.status = 'cancel_requested'))
     and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user)
     for update of a;
  if not found then
    perform pgflight._reject_write(p_attempt_id, p_token, p_operation);
  end if;
  return v_row;
end
$$;

COMMENT ON FUNCTION pgflight._lock_held(p_attempt_id bigint, p_token bigint, p_operation text, p_with_cancel_requested boolean) IS 'Internal: lock a live attempt held with this token, or raise as _reject_write (22023, ZF001, ZF002, ZF003, ZF012).';

REVOKE ALL ON FUNCTION pgflight._lock_held(p_attempt_id bigint, p_token bigint, p_operation text, p_with_cancel_requested boolean) FROM PUBLIC;

commit;
