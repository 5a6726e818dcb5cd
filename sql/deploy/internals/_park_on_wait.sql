-- Deploy pgflight:internals/_park_on_wait

begin;

set local role pgflight_owner;

-- Park the attempt the caller holds (locked by _lock_held) on a pending wait: no lease, no attempt
-- spent; the wait's resolution requeues it and the recipe runs again from the top.
CREATE OR REPLACE FUNCTION pgflight._park_on_wait(p_att pgflight.step_attempts, p_wait pgflight.waits) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  update pgflight.waits w set parked_attempt_id = p_att.id where w.id = p_wait.id;
  update pgflight.step_attempts a set status = 'awaiting_approval' where a.id = p_att.id;
  perform pgflight._event(p_att.run_id, p_att.step_id, p_att.id, p_att.status, 'awaiting_approval',
                          p_att.worker_id, 'wait_parked', null,
                          jsonb_strip_nulls(jsonb_build_object(
                            'wait_key', p_wait.wait_key, 'kind', p_wait.kind, 'event_name', p_wait.event_name,
                            'event_key', p_wait.event_key, 'due_at', p_wait.due_at)));
end
$$;

COMMENT ON FUNCTION pgflight._park_on_wait(p_att pgflight.step_attempts, p_wait pgflight.waits) IS 'Internal: park a held attempt on a pending wait (awaiting_approval, lease given up).';

REVOKE ALL ON FUNCTION pgflight._park_on_wait(p_att pgflight.step_attempts, p_wait pgflight.waits) FROM PUBLIC;

commit;
