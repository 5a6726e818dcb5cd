-- Deploy pgflight:views/run_list

begin;

set local role pgflight_owner;

-- A security_barrier view showing only the reading login's workspaces. The workspace
-- list is an initplan, computed once per query; null (every workspace: a single-tenant install,
-- the owner, a superuser) skips the filter row by row.
CREATE OR REPLACE VIEW pgflight.run_list WITH (security_barrier='true') AS
 SELECT r.id AS run_id,
    w.name AS workspace,
    r.recipe,
    r.status,
    r.idempotency_key,
    r.submitted_by,
    r.created_at,
    r.finished_at
   FROM (pgflight.runs r
     JOIN pgflight.workspaces w ON ((w.id = r.workspace_id)))
  WHERE ((( SELECT pgflight._lane_workspaces('reader'::text) AS _lane_workspaces) IS NULL) OR (r.workspace_id = ANY (COALESCE(( SELECT pgflight._lane_workspaces('reader'::text) AS _lane_workspaces), '{}'::bigint[]))));

COMMENT ON VIEW pgflight.run_list IS 'Runs with their workspace name.';

GRANT SELECT ON TABLE pgflight.run_list TO pgflight_reader;
GRANT SELECT ON TABLE pgflight.run_list TO pgflight_operator;

commit;
