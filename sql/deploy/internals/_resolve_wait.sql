-- Deploy pgflight:internals/_resolve_wait

begin;

set local role pgflight_owner;

-- Record a wait's outcome once and wake the attempt parked on it. The UPDATE's "outcome is null"
-- makes the first resolution win: a later one (a second emit, the sweep after an emit, an emit
-- after the timeout) changes nothing and returns false. The parked attempt is requeued at once
-- when it is still parked (a cancelled one stays cancelled). Lock order: the wait row, then the
-- attempt (a running attempt is never locked here: its committed status is not awaiting_approval).
CREATE OR REPLACE FUNCTION pgflight._resolve_wait(p_wait_id bigint, p_outcome text, p_payload jsonb, p_event_id text, p_actor text) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_wait pgflight.waits;
  v_att_id bigint;
begin
  update pgflight.waits w
     set outcome = p_outcome, payload = p_payload, event_id = p_event_id, resolved_at = pgflight._now()
   where w.id = p_wait_id and w.outcome is null
  returning w.* into v_wait;
  if not found then
    return false;
  end if;
  if v_wait.parked_attempt_id is not null then
    update pgflight.step_attempts a
       set status = 'queued', available_after = pgflight._now()
     where a.id = v_wait.parked_attempt_id and a.status = 'awaiting_approval'
    returning a.id into v_att_id;
  end if;
  perform pgflight._event((select s.run_id from pgflight.steps s where s.id = v_wait.step_id), v_wait.step_id,
                          v_att_id, case when v_att_id is null then null else 'awaiting_approval' end,
                          case when v_att_id is null then null else 'queued' end,
                          null, 'wait_resolved', p_actor,
                          jsonb_build_object('wait_key', v_wait.wait_key, 'kind', v_wait.kind,
                                             'outcome', p_outcome, 'event_id', p_event_id));
  if v_att_id is not null then
    perform pgflight._notify_ready();
  end if;
  return true;
end
$$;

COMMENT ON FUNCTION pgflight._resolve_wait(p_wait_id bigint, p_outcome text, p_payload jsonb, p_event_id text, p_actor text) IS 'Internal: record a wait''s outcome if none is recorded yet (true) and requeue the attempt parked on it.';

REVOKE ALL ON FUNCTION pgflight._resolve_wait(p_wait_id bigint, p_outcome text, p_payload jsonb, p_event_id text, p_actor text) FROM PUBLIC;

commit;
