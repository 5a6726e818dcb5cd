-- Deploy pgflight:internals/_decide

begin;

set local role pgflight_owner;

-- Shared by approve and expire_approvals: record the decision on a gate row the caller has
-- locked, and requeue the step if it is parked at that gate. An attempt parked on a pending timer
-- or event wait (pgflight.waits) is not woken by a decision made early for a later gate: the
-- decision is kept and read when the step reaches the gate.
CREATE OR REPLACE FUNCTION pgflight._decide(p_gate_id bigint, p_decision text, p_actor text, p_note text, p_reason text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_gate record;
  v_att record;
begin
  update pgflight.approvals
     set decision = p_decision, actor = p_actor, note = p_note, decided_at = pgflight._now()
   where id = p_gate_id
  returning * into v_gate;
  update pgflight.step_attempts a
     set status = 'queued', available_after = pgflight._now()
   where a.step_id = v_gate.step_id and a.status = 'awaiting_approval'
     and not exists (select from pgflight.waits w where w.parked_attempt_id = a.id and w.outcome is null)
  returning a.id, a.run_id into v_att;
  perform pgflight._event((select s.run_id from pgflight.steps s where s.id = v_gate.step_id), v_gate.step_id,
                          v_att.id, case when v_att.id is null then null else 'awaiting_approval' end,
                          case when v_att.id is null then null else 'queued' end,
                          null, p_reason, p_actor,
                          jsonb_build_object('gate_key', v_gate.gate_key, 'decision', p_decision, 'note', p_note));
  if v_att.id is not null then
    perform pgflight._notify_ready();
  end if;
end
$$;

COMMENT ON FUNCTION pgflight._decide(p_gate_id bigint, p_decision text, p_actor text, p_note text, p_reason text) IS 'Internal: record a gate decision and requeue the step parked at it.';

REVOKE ALL ON FUNCTION pgflight._decide(p_gate_id bigint, p_decision text, p_actor text, p_note text, p_reason text) FROM PUBLIC;

commit;
