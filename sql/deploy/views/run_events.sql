-- Deploy pgflight:views/run_events

begin;

set local role pgflight_owner;

-- A security_barrier view showing only the reading login's workspaces. The workspace
-- list is an initplan, computed once per query; null (every workspace: a single-tenant install,
-- the owner, a superuser) skips the filter row by row.
-- The events rows, and the two transitions of the happy path that the attempt row
-- records without one (tables/step_attempts_event_ids): a started claim ('claimed', queued ->
-- running, at claimed_at) and a success from running ('succeeded', running -> succeeded, at
-- finished_at), each with the events id it took, so the log reads as before, in one id order.
-- Later: a submitted run's first queued too (queue_event_id, at created_at, actor the
-- run's submitted_by; tables/step_attempts_queue_event).
-- Reclaim drain: a reclaim's retry's queued too (the same queue_event_id, on the new
-- attempt, with the backoff in queue_delay_s: reason retry_scheduled, actor reclaim, detail
-- delay_s and attempt_no as _reclaim_picked wrote them; tables/step_attempts_retry_queue_event).
-- The derived rows take run_id and step_id from steps, so a read of one run or step goes through
-- steps_run_idx (or the primary key) and the attempts of those steps, never the whole table.
CREATE OR REPLACE VIEW pgflight.run_events WITH (security_barrier='true') AS
 SELECT l.id,
    l.at,
    l.run_id,
    l.step_id,
    l.attempt_id,
    l.from_status,
    l.to_status,
    l.worker_id,
    l.actor,
    l.reason,
    l.detail
   FROM ( SELECT e.id,
            e.at,
            e.run_id,
            e.step_id,
            e.attempt_id,
            e.from_status,
            e.to_status,
            e.worker_id,
            e.actor,
            e.reason,
            e.detail
           FROM pgflight.events e
        UNION ALL
         SELECT d.id,
            d.at,
            s.run_id,
            s.id,
            a.id,
            d.from_status,
            d.to_status,
                CASE
                    WHEN (d.to_status <> 'queued'::text) THEN a.worker_id
                    ELSE NULL::bigint
                END AS "case",
                CASE d.reason
                    WHEN 'queued'::text THEN ( SELECT r.submitted_by
                       FROM pgflight.runs r
                      WHERE (r.id = s.run_id))
                    WHEN 'retry_scheduled'::text THEN 'reclaim'::text
                    ELSE NULL::text
                END AS "case",
            d.reason,
                CASE
                    WHEN (d.reason = 'retry_scheduled'::text) THEN jsonb_build_object('delay_s', round((a.queue_delay_s)::numeric, 3), 'attempt_no', a.attempt_no)
                    ELSE NULL::jsonb
                END AS "case"
           FROM ((pgflight.steps s
             JOIN pgflight.step_attempts a ON ((a.step_id = s.id)))
             CROSS JOIN LATERAL ( VALUES (a.queue_event_id,a.created_at,NULL::text,'queued'::text,
                        CASE
                            WHEN (a.queue_delay_s IS NULL) THEN 'queued'::text
                            ELSE 'retry_scheduled'::text
                        END), (a.claim_event_id,a.claimed_at,'queued'::text,'running'::text,'claimed'::text), (a.finish_event_id,a.finished_at,'running'::text,'succeeded'::text,'succeeded'::text)) d(id, at, from_status, to_status, reason))
          WHERE (d.id IS NOT NULL)) l
  WHERE ((( SELECT pgflight._lane_workspaces('reader'::text) AS _lane_workspaces) IS NULL) OR (EXISTS ( SELECT
           FROM pgflight.runs r
          WHERE ((r.id = l.run_id) AND (r.workspace_id = ANY (COALESCE(( SELECT pgflight._lane_workspaces('reader'::text) AS _lane_workspaces), '{}'::bigint[])))))));

COMMENT ON VIEW pgflight.run_events IS 'The transition log: the events rows, and the submits, reclaim retries, started claims and successes the attempts record.';

GRANT SELECT ON TABLE pgflight.run_events TO pgflight_reader;
GRANT SELECT ON TABLE pgflight.run_events TO pgflight_operator;

commit;
