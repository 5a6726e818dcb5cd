-- Deploy pgflight:internals/_require_own_attempt

begin;

set local role pgflight_owner;

-- Raise when p_token is the current token of attempt p_attempt_id and no worker of the calling
-- login holds the attempt (another login's worker, or no worker at all): the caller has a
-- capability that is not its own (a leaked token). ZF012 when the attempt is in a workspace where
-- the login has the worker lane; otherwise the answer for an unknown attempt (ZF003), so a token
-- of another tenant tells nothing about it. A NULL id or token is refused (22023). Returns when
-- the token is not the attempt's current one, or the attempt is unknown: the caller answers for
-- that (lease lost, unknown attempt). Nothing about the attempt is shown.
CREATE OR REPLACE FUNCTION pgflight._require_own_attempt(p_attempt_id bigint, p_token bigint, p_operation text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_in_lane boolean;
begin
  if p_attempt_id is null or p_token is null then
    perform pgflight._null_refused(p_operation, case when p_attempt_id is null then 'the attempt id'
                                                     else 'the fencing token' end);
  end if;
  select pgflight._may('worker', a.workspace_id) into v_in_lane
    from pgflight.step_attempts a left join pgflight.workers w on w.id = a.worker_id
   where a.id = p_attempt_id and a.fencing_token = p_token
     and w.login is distinct from session_user;
  if not found then
    return;
  end if;
  if not v_in_lane then
    perform pgflight._unknown_attempt(p_attempt_id);
  end if;
  raise exception using
    errcode = 'ZF012',
    message = format('%s refused: attempt %s is not held by a worker of login %s', p_operation, p_attempt_id,
                     session_user),
    detail  = 'An attempt may be written only by the login whose worker claimed it, whatever token is sent.',
    hint    = 'Write only attempts that your own claim_batch returned.';
end
$$;

COMMENT ON FUNCTION pgflight._require_own_attempt(p_attempt_id bigint, p_token bigint, p_operation text) IS 'Internal: raise when this token is the attempt''s current one but no worker of the login holds it (ZF012; ZF003 outside the login''s worker lanes); 22023 for a NULL id or token.';

REVOKE ALL ON FUNCTION pgflight._require_own_attempt(p_attempt_id bigint, p_token bigint, p_operation text) FROM PUBLIC;

commit;
