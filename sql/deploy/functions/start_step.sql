-- Deploy pgflight:functions/start_step

begin;

set local role pgflight_owner;

-- claimed -> running for an attempt this caller holds. Idempotent for the holder (a second call
-- with the same token returns the same started_at). Errors: ZF001 lease lost, ZF002 cancelled,
-- ZF003 unknown attempt.
-- Plans: the attempt by its primary key, whatever the statistics said when they were
-- made (a worker's session keeps them for hours): enable_seqscan off, jit off, as the other hot
-- paths, and the status compared as (status || ''), which no partial index's predicate is proved
-- from. With a plain equality, a plan made while few attempts were leased walked the whole of
-- step_attempts_leased_ws_idx (every leased attempt) filtering on the id, at every start.
CREATE OR REPLACE FUNCTION pgflight.start_step(p_attempt_id bigint, p_token bigint) RETURNS TABLE(attempt_id bigint, started_at timestamp with time zone, lease_expires_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_row record;
begin
  update pgflight.step_attempts a
     set status = 'running', started_at = v_now
   where a.id = p_attempt_id and a.fencing_token = p_token and (a.status || '') = 'claimed'
     -- only the login whose worker holds the attempt (else ZF012 from _reject_write)
     and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user)
  returning a.id, a.run_id, a.step_id, a.worker_id, a.started_at, a.lease_expires_at into v_row;
  if found then
    perform pgflight._event(v_row.run_id, v_row.step_id, v_row.id, 'claimed', 'running', v_row.worker_id, 'started');
    return query select v_row.id, v_row.started_at, v_row.lease_expires_at;
    return;
  end if;
  return query select a.id, a.started_at, a.lease_expires_at from pgflight.step_attempts a
    where a.id = p_attempt_id and a.fencing_token = p_token and (a.status || '') = 'running'
      and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user);
  if not found then
    perform pgflight._reject_write(p_attempt_id, p_token, 'start_step');
  end if;
end
$$;

COMMENT ON FUNCTION pgflight.start_step(p_attempt_id bigint, p_token bigint) IS 'claimed -> running. Errors: ZF001 lease lost, ZF002 cancelled, ZF003 unknown attempt, ZF012 another login''s attempt.';

REVOKE ALL ON FUNCTION pgflight.start_step(p_attempt_id bigint, p_token bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.start_step(p_attempt_id bigint, p_token bigint) TO pgflight_worker;

commit;
