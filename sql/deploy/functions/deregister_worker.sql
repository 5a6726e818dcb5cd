-- Deploy pgflight:functions/deregister_worker

begin;

set local role pgflight_owner;

-- Mark a worker stopped (graceful shutdown), then release every lease it still holds: each
-- claimed, running or cancel_requested attempt of the worker goes back to queued at once, no
-- attempt spent, or acknowledges its cancel (release_step with the note 'worker deregistered').
-- A stopping worker releases what it runs first; what is left here is what it could not see: a
-- claim of its own that was on the server during the shutdown and committed before this call
-- (the update below waits for it: claim_batch holds the worker row FOR SHARE), or a release that
-- failed. Without this, those steps stayed leased to a stopped worker until their leases lapsed,
-- an attempt spent (found by tests_py/test_attack_s7.py). Locks: the worker row, then its attempts
-- in id order, the order of claim_batch and heartbeat.
-- Only the login that registered the worker may stop it: any other id, stopped or
-- not, is ZF010, so a sweep over a range of ids ends nobody else's workers. Stopping a stopped
-- worker of one's own is a no-op apart from the release of what it still holds.
CREATE OR REPLACE FUNCTION pgflight.deregister_worker(p_worker_id bigint) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_held record;
begin
  update pgflight.workers set stopped_at = coalesce(stopped_at, pgflight._now())
   where id = p_worker_id and login = session_user;
  if not found then
    raise exception using errcode = 'ZF010', message = format('unknown worker %s', p_worker_id),
      detail = format('no worker %s registered by login %s', p_worker_id, session_user),
      hint = 'Deregister only the worker ids your own register_worker returned.';
  end if;
  -- a statement of its own, after the update: it sees what a claim committed while we waited.
  -- The leased rows through step_attempts_leased_ws_idx (live leases only), not a scan by worker;
  -- locked here, so one a completion ended while we waited for its lock is read again and left
  -- out (the release below then never meets a lost lease, ZF001).
  for v_held in
    select a.id, a.fencing_token from pgflight.step_attempts a
     where a.worker_id = p_worker_id and a.status in ('claimed', 'running', 'cancel_requested')
     order by a.id
       for update of a
  loop
    perform pgflight.release_step(v_held.id, v_held.fencing_token, 'worker deregistered');
  end loop;
end
$$;

COMMENT ON FUNCTION pgflight.deregister_worker(p_worker_id bigint) IS 'Mark a worker of this login stopped and release the leases it still holds (no attempt spent). Errors: ZF010.';

REVOKE ALL ON FUNCTION pgflight.deregister_worker(p_worker_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.deregister_worker(p_worker_id bigint) TO pgflight_worker;

commit;
