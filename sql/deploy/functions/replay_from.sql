-- Deploy pgflight:functions/replay_from

begin;

set local role pgflight_owner;

-- Run a finished step (succeeded, dead_letter or cancelled) again on a fresh attempt, and then
-- what depends on it: each ancestor runs again once the step ends. History stays. Returns the
-- new attempt id. Errors: ZF003 unknown step (or purged meanwhile), ZF006 step not terminal or an
-- ancestor running. Locking: the run row FOR KEY SHARE, then _reopen_step's (docs/locking.md).
CREATE OR REPLACE FUNCTION pgflight.replay_from(p_step_id bigint, p_actor text DEFAULT NULL::text, p_note text DEFAULT NULL::text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform pgflight._require_lane_on_step('operator', p_step_id, 'replay_from');  -- tenants
  -- Lock order with purge_finished (runs FOR UPDATE SKIP LOCKED, then their steps): the run row
  -- first, FOR KEY SHARE, before any steps row. A purge that holds the run is waited for (nothing
  -- else held yet) and the step is then gone: ZF003. Once held, a purge skips the run. KEY SHARE
  -- does not wait for completions or cancels, which update runs rows FOR NO KEY UPDATE.
  perform from pgflight.runs r
   where r.id = (select s.run_id from pgflight.steps s where s.id = p_step_id)
     for key share of r;
  if not exists (select from pgflight.steps s where s.id = p_step_id) then
    raise exception using errcode = 'ZF003', message = format('unknown step %s', p_step_id);
  end if;
  return pgflight._reopen_step(p_step_id, session_user::text, 'replayed', pgflight._actor_note(p_note, p_actor));
end
$$;

COMMENT ON FUNCTION pgflight.replay_from(p_step_id bigint, p_actor text, p_note text) IS 'Run a terminal step again and then its ancestors; returns the attempt id. Errors: ZF003, ZF006.';

REVOKE ALL ON FUNCTION pgflight.replay_from(p_step_id bigint, p_actor text, p_note text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.replay_from(p_step_id bigint, p_actor text, p_note text) TO pgflight_operator;

commit;
