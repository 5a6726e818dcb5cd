-- Deploy pgflight:views/step_status

begin;

set local role pgflight_owner;

-- A security_barrier view showing only the reading login's workspaces. The workspace
-- list is an initplan, computed once per query; null (every workspace: a single-tenant install,
-- the owner, a superuser) skips the filter row by row.
CREATE OR REPLACE VIEW pgflight.step_status WITH (security_barrier='true') AS
 SELECT s.id AS step_id,
    s.run_id,
    s.parent_id,
    s.depth,
    s.step_key,
    s.recipe,
    a.id AS attempt_id,
    a.attempt_no,
    a.status,
    s.failed_attempts,
    s.max_attempts,
    a.worker_id,
    a.claimed_at,
    a.started_at,
    a.finished_at,
    a.lease_expires_at,
    a.deadline_at,
    a.result,
    a.error,
    a.reason,
    s.children_pending,
    s.created_at
   FROM (pgflight.steps s
     JOIN pgflight.step_attempts a ON (((a.step_id = s.id) AND (a.attempt_no = s.last_attempt_no))))
  WHERE ((( SELECT pgflight._lane_workspaces('reader'::text) AS _lane_workspaces) IS NULL) OR (EXISTS ( SELECT
           FROM pgflight.runs r
          WHERE ((r.id = s.run_id) AND (r.workspace_id = ANY (COALESCE(( SELECT pgflight._lane_workspaces('reader'::text) AS _lane_workspaces), '{}'::bigint[])))))));

COMMENT ON VIEW pgflight.step_status IS 'Each step with the status of its latest attempt (the step''s current state).';

GRANT SELECT ON TABLE pgflight.step_status TO pgflight_reader;
GRANT SELECT ON TABLE pgflight.step_status TO pgflight_operator;

commit;
