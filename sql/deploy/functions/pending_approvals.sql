-- Deploy pgflight:functions/pending_approvals

begin;

set local role pgflight_owner;

-- Read: approval gates a step is parked on (requested, undecided, the step's latest attempt in
-- awaiting_approval), oldest request first, at most p_limit (1..1000). Reads approvals_expiring_idx
-- (undecided gates only). Only the workspaces the login may read. Errors: 22023 bad limit.
CREATE OR REPLACE FUNCTION pgflight.pending_approvals(p_limit integer DEFAULT 200) RETURNS TABLE(step_id bigint, run_id bigint, workspace text, step_key text, recipe text, gate_key text, request jsonb, default_decision text, requested_at timestamp with time zone, expires_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_lanes bigint[] := pgflight._lane_workspaces('reader');  -- null: every workspace
begin
  perform pgflight._require_limit('limit', p_limit, 1000);
  return query
  select s.id, s.run_id, w.name, s.step_key, s.recipe, g.gate_key, g.request, g.default_decision,
         g.requested_at, g.expires_at
    from pgflight.approvals g
    join pgflight.steps s on s.id = g.step_id
    join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no
    join pgflight.runs r on r.id = s.run_id
    join pgflight.workspaces w on w.id = r.workspace_id
   where g.decision is null and g.requested_at is not null and a.status = 'awaiting_approval'
     and (v_lanes is null or r.workspace_id = any(v_lanes))
   order by g.requested_at, g.id
   limit p_limit;
end
$$;

COMMENT ON FUNCTION pgflight.pending_approvals(p_limit integer) IS 'Read: undecided approval gates with their step parked on them, oldest first. Errors: 22023.';

REVOKE ALL ON FUNCTION pgflight.pending_approvals(p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.pending_approvals(p_limit integer) TO pgflight_reader;
GRANT ALL ON FUNCTION pgflight.pending_approvals(p_limit integer) TO pgflight_operator;

commit;
