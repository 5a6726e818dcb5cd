-- Deploy pgflight:functions/run_waits

begin;

set local role pgflight_owner;

-- Read: what the parked steps of run p_run_id wait for, one row per pending wait, by step id:
-- the steps whose latest attempt is awaiting_approval, each with the wait it is parked on. kind
-- 'approval': an undecided gate (gate_key, request, default_decision, requested_at, expires_at);
-- 'event': an event wait (event_name, event_key; due_at its timeout, null without one); 'timer':
-- a sleep (due_at, when it elapses). The columns another kind has no use for are null. A run
-- outside the login's reader lanes finds no row, exactly as a run that does not exist (one answer
-- for what a login may not see). Errors: 22023 a NULL run id.
CREATE OR REPLACE FUNCTION pgflight.run_waits(p_run_id bigint) RETURNS TABLE(step_id bigint, attempt_id bigint, step_key text, recipe text, kind text, gate_key text, request jsonb, default_decision text, requested_at timestamp with time zone, expires_at timestamp with time zone, event_name text, event_key text, due_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_lanes bigint[] := pgflight._lane_workspaces('reader');  -- null: every workspace
begin
  if p_run_id is null then
    raise exception using errcode = '22023', message = 'run_waits refused: the run id is required',
      detail = 'p_run_id is null', hint = 'Pass the id submit_run returned.';
  end if;
  return query
  with parked as (
    -- the run's steps parked now: their latest attempt awaits a gate, a timer or an event
    select s.id as step_id, a.id as attempt_id, s.step_key, s.recipe
      from pgflight.runs r
      join pgflight.steps s on s.run_id = r.id
      join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no
     where r.id = p_run_id and a.status = 'awaiting_approval'
       and (v_lanes is null or r.workspace_id = any(v_lanes))
  )
  select p.step_id, p.attempt_id, p.step_key, p.recipe, 'approval'::text, g.gate_key, g.request,
         g.default_decision, g.requested_at, g.expires_at, null::text, null::text, null::timestamptz
    from parked p
    join pgflight.approvals g on g.step_id = p.step_id
   where g.decision is null and g.requested_at is not null
  union all
  select p.step_id, p.attempt_id, p.step_key, p.recipe, w.kind, null::text, null::jsonb, null::text,
         w.requested_at, null::timestamptz, w.event_name, w.event_key, w.due_at
    from parked p
    join pgflight.waits w on w.step_id = p.step_id and w.parked_attempt_id = p.attempt_id
   where w.outcome is null
   order by 1, 5, 6;
end
$$;

COMMENT ON FUNCTION pgflight.run_waits(p_run_id bigint) IS 'Read: the pending waits of a run''s parked steps (step_id, attempt_id, step_key, recipe, kind approval | event | timer, gate_key, request, default_decision, requested_at, expires_at, event_name, event_key, due_at), by step id; a run outside the login''s lanes has none. Errors: 22023.';

REVOKE ALL ON FUNCTION pgflight.run_waits(p_run_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.run_waits(p_run_id bigint) TO pgflight_reader;
GRANT ALL ON FUNCTION pgflight.run_waits(p_run_id bigint) TO pgflight_operator;

commit;
