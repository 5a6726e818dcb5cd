-- Deploy pgflight:views/workspace_flow

begin;

set local role pgflight_owner;

-- Each workspace's flow control with its leased, queued and parked counts: what
-- `pgflight show` and `pgflight workspace` print.
-- Security_barrier, only the reading login's workspaces (as views/run_list).
CREATE OR REPLACE VIEW pgflight.workspace_flow WITH (security_barrier='true') AS
 SELECT w.name AS workspace,
    l.max_in_flight,
    COALESCE(l.share, 1) AS share,
    l.starts_per_s,
    l.burst,
    l.model_tokens_per_min,
    l.paused_at,
    l.paused_by,
    ( SELECT count(*) AS count
           FROM pgflight.step_attempts a
          WHERE ((a.workspace_id = w.id) AND (a.status = ANY (ARRAY['claimed'::text, 'running'::text, 'cancel_requested'::text])))) AS in_flight,
    ( SELECT count(*) AS count
           FROM pgflight.step_attempts a
          WHERE ((a.workspace_id = w.id) AND (a.status = 'queued'::text))) AS queued,
    ( SELECT count(*) AS count
           FROM pgflight.step_attempts a
          WHERE ((a.workspace_id = w.id) AND (a.status = 'queued'::text) AND (a.available_after = 'infinity'::timestamp with time zone))) AS parked
   FROM (pgflight.workspaces w
     LEFT JOIN pgflight.workspace_limits l ON ((l.workspace_id = w.id)))
  WHERE ((( SELECT pgflight._lane_workspaces('reader'::text) AS _lane_workspaces) IS NULL) OR (w.id = ANY (COALESCE(( SELECT pgflight._lane_workspaces('reader'::text) AS _lane_workspaces), '{}'::bigint[]))));

COMMENT ON VIEW pgflight.workspace_flow IS 'Per workspace: max_in_flight, share, starts_per_s/burst, model_tokens_per_min, pause; in_flight (leased attempts), queued, parked (queued behind a full concurrency key).';

GRANT SELECT ON TABLE pgflight.workspace_flow TO pgflight_reader;
GRANT SELECT ON TABLE pgflight.workspace_flow TO pgflight_operator;

commit;
