-- Deploy pgflight:views/schedule_list

begin;

set local role pgflight_owner;

-- The recurring runs: what `pgflight schedule list` prints.
-- Security_barrier, only the reading login's workspaces (as views/run_list).
CREATE OR REPLACE VIEW pgflight.schedule_list WITH (security_barrier='true') AS
 SELECT w.name AS workspace,
    s.name,
    s.cron,
    s.time_zone,
    s.recipe,
    s.overlap,
    s.next_fire_at,
    s.last_fire_at,
    s.last_run_id,
    s.pending_fire_at,
    s.created_by,
    s.created_at
   FROM (pgflight.schedules s
     JOIN pgflight.workspaces w ON ((w.id = s.workspace_id)))
  WHERE ((( SELECT pgflight._lane_workspaces('reader'::text) AS _lane_workspaces) IS NULL) OR (s.workspace_id = ANY (COALESCE(( SELECT pgflight._lane_workspaces('reader'::text) AS _lane_workspaces), '{}'::bigint[]))));

COMMENT ON VIEW pgflight.schedule_list IS 'Schedules with their next and last firing.';

GRANT SELECT ON TABLE pgflight.schedule_list TO pgflight_reader;
GRANT SELECT ON TABLE pgflight.schedule_list TO pgflight_operator;

commit;
