-- Deploy pgflight:internals/_wake

begin;

set local role pgflight_owner;

-- Requeue a parked parent when its last child ended. Compare-and-swap on awaiting_children, so
-- a parent is woken at most once per parking however many callers race here.
CREATE OR REPLACE FUNCTION pgflight._wake(p_step_id bigint, p_reason text, p_actor text DEFAULT NULL::text) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_attempt record;
begin
  update pgflight.step_attempts a
     set status = 'queued', available_after = pgflight._now()
   where a.step_id = p_step_id and a.status = 'awaiting_children'
  returning a.id, a.run_id into v_attempt;
  if not found then
    return false;
  end if;
  perform pgflight._event(v_attempt.run_id, p_step_id, v_attempt.id, 'awaiting_children', 'queued',
                          null, p_reason, p_actor);
  perform pgflight._notify_ready();
  return true;
end
$$;

COMMENT ON FUNCTION pgflight._wake(p_step_id bigint, p_reason text, p_actor text) IS 'Internal: awaiting_children -> queued for the step''s live attempt, once; true when it moved.';

REVOKE ALL ON FUNCTION pgflight._wake(p_step_id bigint, p_reason text, p_actor text) FROM PUBLIC;

commit;
