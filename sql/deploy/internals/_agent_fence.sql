-- Deploy pgflight:internals/_agent_fence

begin;

set local role pgflight_owner;

-- The fence of every agent write: the attempt must be claimed or running with this token (else
-- ZF001 / ZF002 / ZF003 from _reject_write) and the agent run must belong to its step (else ZF003).
-- One statement locks the attempt FOR SHARE (a concurrent reclaim skips it, a cancel waits for us)
-- and then the agent run FOR UPDATE (one writer per agent). Returns the agent run row.
-- Seq scans off (jit off, so their penalty cannot trigger compilation): a plan made while
-- step_attempts was small read it whole at every fenced write once it grew.
CREATE OR REPLACE FUNCTION pgflight._agent_fence(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_operation text) RETURNS pgflight.agent_runs
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
declare
  v_run pgflight.agent_runs;
begin
  select r.* into v_run
    from pgflight.step_attempts a
    join pgflight.agent_runs r on r.step_id = a.step_id
   where a.id = p_attempt_id and a.fencing_token = p_token and a.status in ('claimed', 'running')
     and r.id = p_agent_run_id
     -- only the login whose worker holds the attempt (else ZF012 from _reject_write)
     and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user)
     for share of a for update of r;
  if found then
    return v_run;
  end if;
  perform 1 from pgflight.step_attempts a join pgflight.workers w on w.id = a.worker_id
   where a.id = p_attempt_id and a.fencing_token = p_token and a.status in ('claimed', 'running')
     and w.login = session_user;
  if not found then
    perform pgflight._reject_write(p_attempt_id, p_token, p_operation);
  end if;
  raise exception using
    errcode = 'ZF003',
    message = format('unknown agent run %s for attempt %s', p_agent_run_id, p_attempt_id),
    hint    = 'Use the agent_run_id that begin_agent_run returned for this step.';
end
$$;

COMMENT ON FUNCTION pgflight._agent_fence(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_operation text) IS 'Internal: fence an agent write by (attempt, token); returns the agent run, locked. ZF001, ZF002, ZF003.';

REVOKE ALL ON FUNCTION pgflight._agent_fence(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint, p_operation text) FROM PUBLIC;

commit;
