-- Deploy pgflight:views/attempts

begin;

set local role pgflight_owner;

-- A security_barrier view showing only the reading login's workspaces. The workspace
-- list is an initplan, computed once per query; null (every workspace: a single-tenant install,
-- the owner, a superuser) skips the filter row by row.
-- A fencing token is a capability: shown only on attempts held by the login's own workers.
CREATE OR REPLACE VIEW pgflight.attempts WITH (security_barrier='true') AS
 SELECT a.id AS attempt_id,
    a.step_id,
    a.run_id,
    a.attempt_no,
    a.recipe,
    a.status,
    a.worker_id,
        CASE
            WHEN (w.login = SESSION_USER) THEN a.fencing_token
            ELSE NULL::bigint
        END AS fencing_token,
    a.claimed_at,
    a.started_at,
    a.lease_expires_at,
    a.deadline_at,
    a.finished_at,
    a.available_after,
    a.reason,
    a.error,
    a.result
   FROM (pgflight.step_attempts a
     LEFT JOIN pgflight.workers w ON ((w.id = a.worker_id)))
  WHERE ((( SELECT pgflight._lane_workspaces('reader'::text) AS _lane_workspaces) IS NULL) OR (EXISTS ( SELECT
           FROM pgflight.runs r
          WHERE ((r.id = a.run_id) AND (r.workspace_id = ANY (COALESCE(( SELECT pgflight._lane_workspaces('reader'::text) AS _lane_workspaces), '{}'::bigint[])))))));

COMMENT ON VIEW pgflight.attempts IS 'Every attempt of the login''s workspaces, with its claim metadata (never cleared); the fencing token only on attempts of the login''s own workers.';

GRANT SELECT ON TABLE pgflight.attempts TO pgflight_reader;
GRANT SELECT ON TABLE pgflight.attempts TO pgflight_operator;

commit;
