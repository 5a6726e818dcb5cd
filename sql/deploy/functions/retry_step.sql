-- Deploy pgflight:functions/retry_step

begin;

set local role pgflight_owner;

-- Give a dead-lettered step a fresh attempt (its failure count starts again at zero).
-- Returns the new attempt id. Errors: ZF003 unknown step (or purged meanwhile), ZF006 not
-- dead-lettered. Locking: the run row FOR KEY SHARE, then _reopen_step's (docs/locking.md).
CREATE OR REPLACE FUNCTION pgflight.retry_step(p_step_id bigint, p_actor text DEFAULT NULL::text, p_note text DEFAULT NULL::text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_status text;
begin
  perform pgflight._require_lane_on_step('operator', p_step_id, 'retry_step');  -- tenants
  -- Lock order with purge_finished (runs FOR UPDATE SKIP LOCKED, then their steps): the run row
  -- first, FOR KEY SHARE, before any steps row. A purge that holds the run is waited for (nothing
  -- else held yet) and the step is then gone: ZF003. Once held, a purge skips the run. KEY SHARE
  -- does not wait for completions or cancels, which update runs rows FOR NO KEY UPDATE.
  perform from pgflight.runs r
   where r.id = (select s.run_id from pgflight.steps s where s.id = p_step_id)
     for key share of r;
  select a.status into v_status from pgflight.steps s
    join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no
   where s.id = p_step_id;
  if not found then
    raise exception using errcode = 'ZF003', message = format('unknown step %s', p_step_id);
  end if;
  if v_status <> 'dead_letter' then
    raise exception using errcode = 'ZF006', message = format('step %s is %s, not dead_letter', p_step_id, v_status),
      hint = 'retry_step is for dead letters; use replay_from to run a finished step again.';
  end if;
  return pgflight._reopen_step(p_step_id, session_user::text, 'retried', pgflight._actor_note(p_note, p_actor));
end
$$;

COMMENT ON FUNCTION pgflight.retry_step(p_step_id bigint, p_actor text, p_note text) IS 'Fresh attempt for a dead-lettered step; returns the attempt id. Errors: ZF003, ZF006.';

REVOKE ALL ON FUNCTION pgflight.retry_step(p_step_id bigint, p_actor text, p_note text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.retry_step(p_step_id bigint, p_actor text, p_note text) TO pgflight_operator;

commit;
