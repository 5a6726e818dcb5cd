-- Deploy pgflight:internals/_reject_write

begin;

set local role pgflight_owner;

-- Raise the refusal of a worker write that did not match a live attempt held by the login with
-- this token, by the rule above. Called after the fenced statement missed; it never returns.
-- The current token is never shown (it is a capability); the attempt's status only to the login
-- whose worker holds it.
CREATE OR REPLACE FUNCTION pgflight._reject_write(p_attempt_id bigint, p_token bigint, p_operation text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_att record;
begin
  if p_attempt_id is null or p_token is null then
    perform pgflight._null_refused(p_operation, case when p_attempt_id is null then 'the attempt id'
                                                     else 'the fencing token' end);
  end if;
  select a.status, a.fencing_token, w.login,
         w.login is not distinct from session_user or pgflight._may('worker', a.workspace_id) as visible
    into v_att
    from pgflight.step_attempts a left join pgflight.workers w on w.id = a.worker_id
   where a.id = p_attempt_id;
  if not found or not v_att.visible then
    perform pgflight._unknown_attempt(p_attempt_id);
  end if;
  if v_att.fencing_token = p_token and v_att.login is distinct from session_user then
    perform pgflight._require_own_attempt(p_attempt_id, p_token, p_operation);  -- ZF012
  end if;
  if v_att.fencing_token = p_token and v_att.status in ('cancel_requested', 'cancelled') then
    raise exception using
      errcode = 'ZF002',
      message = format('%s rejected: attempt %s was cancelled', p_operation, p_attempt_id),
      detail  = format('attempt status %s', v_att.status),
      hint    = 'The run or step was cancelled; stop the work and call release_step to acknowledge.';
  end if;
  -- every other path, and the one where the attempt changed since the fenced statement read it
  raise exception using
    errcode = 'ZF001',
    message = format('lease lost on attempt %s', p_attempt_id),
    detail  = format('%s refused: the attempt is not held with caller token %s%s', p_operation, p_token,
                     case when v_att.login = session_user then format(' (attempt status %s)', v_att.status)
                          else '' end),
    hint    = 'The step was reclaimed or finished; abandon this attempt and write nothing.';
end
$$;

COMMENT ON FUNCTION pgflight._reject_write(p_attempt_id bigint, p_token bigint, p_operation text) IS 'Internal: raise the refusal of a fenced write, never returns: 22023 (NULL id or token), ZF003 (unknown, or outside the login''s worker lanes), ZF012 (a leaked token), ZF002 (cancelled), ZF001.';

REVOKE ALL ON FUNCTION pgflight._reject_write(p_attempt_id bigint, p_token bigint, p_operation text) FROM PUBLIC;

commit;
