-- Deploy pgflight:views/engine_health

begin;

set local role pgflight_owner;

-- At the end: what keeps the engine's hot tables from being vacuumed (the oldest
-- xmin in the cluster: its age in transactions, how long its transaction has been open, its
-- backend pid — C49), how full the NOTIFY queue is (0..1; at 1 every NOTIFY fails), the dead
-- tuples of the hot tables (jsonb, from pg_stat_user_tables), and the sweep lag: seconds since the
-- last completed sweep pass (sweep_state.last_pass_at; null before the first); C49's flag (the
-- oldest xmin held for more than 5 minutes) and the database's age(datfrozenxid) (wraparound).
-- Tenancy: the step counts (ready, leased, expired_not_reclaimed, over_deadline_heartbeating,
-- parked) are those of the workspaces the login may read (_lane_workspaces('reader'); every
-- workspace for an every-workspace reader or a superuser), and workers_alive, which no workspace
-- owns, is null unless the login reads every workspace: the rule of metrics_snapshot. The xmin,
-- NOTIFY queue, dead tuples, sweep lag and datfrozenxid figures are the cluster's health, no
-- tenant's data, and stay for every reader.
CREATE OR REPLACE VIEW pgflight.engine_health AS
 SELECT ( SELECT count(*) AS count
           FROM pgflight.step_attempts a
          WHERE ((a.status = 'queued'::text) AND (a.available_after <= ( SELECT pgflight._now() AS _now)) AND ((l.ws IS NULL) OR (a.workspace_id = ANY (l.ws))))) AS ready,
    ( SELECT count(*) AS count
           FROM pgflight.step_attempts a
          WHERE ((a.status = ANY (ARRAY['claimed'::text, 'running'::text, 'cancel_requested'::text])) AND ((l.ws IS NULL) OR (a.workspace_id = ANY (l.ws))))) AS leased,
    ( SELECT count(*) AS count
           FROM pgflight.step_attempts a
          WHERE ((a.status = ANY (ARRAY['claimed'::text, 'running'::text, 'cancel_requested'::text])) AND (a.lease_expires_at < ( SELECT pgflight._now() AS _now)) AND ((l.ws IS NULL) OR (a.workspace_id = ANY (l.ws))))) AS expired_not_reclaimed,
    ( SELECT count(*) AS count
           FROM pgflight.step_attempts a
          WHERE ((a.status = ANY (ARRAY['claimed'::text, 'running'::text])) AND (a.deadline_at < ( SELECT pgflight._now() AS _now)) AND (a.lease_expires_at >= ( SELECT pgflight._now() AS _now)) AND ((l.ws IS NULL) OR (a.workspace_id = ANY (l.ws))))) AS over_deadline_heartbeating,
    ( SELECT count(*) AS count
           FROM pgflight.step_attempts a
          WHERE ((a.status = ANY (ARRAY['awaiting_children'::text, 'awaiting_approval'::text])) AND ((l.ws IS NULL) OR (a.workspace_id = ANY (l.ws))))) AS parked,
        CASE
            WHEN (l.ws IS NULL) THEN ( SELECT count(*) AS count
               FROM pgflight.workers w
              WHERE ((w.stopped_at IS NULL) AND (w.last_seen_at > (( SELECT pgflight._now() AS _now) - '00:01:00'::interval))))
            ELSE NULL::bigint
        END AS workers_alive,
    h.xmin_age AS oldest_xmin_age,
    h.held_s AS oldest_xmin_held_s,
    h.pid AS oldest_xmin_pid,
    pg_notification_queue_usage() AS notify_queue_usage,
    ( SELECT jsonb_object_agg(t.relname, t.n_dead_tup ORDER BY t.relname) AS jsonb_object_agg
           FROM pg_stat_user_tables t
          WHERE ((t.schemaname = 'pgflight'::name) AND (t.relname = ANY (ARRAY['runs'::name, 'steps'::name, 'step_attempts'::name, 'agent_runs'::name, 'workers'::name, 'flow_limits'::name, 'sweep_state'::name])))) AS dead_tuples,
    ( SELECT date_part('epoch'::text, (( SELECT pgflight._now() AS _now) - s.last_pass_at)) AS date_part
           FROM pgflight.sweep_state s) AS sweep_lag_s,
    COALESCE((h.held_s > (300)::double precision), false) AS oldest_xmin_over_5_min,
    ( SELECT age(d.datfrozenxid) AS age
           FROM pg_database d
          WHERE (d.datname = current_database())) AS datfrozenxid_age
   FROM (( SELECT pgflight._lane_workspaces('reader'::text) AS ws) l
     LEFT JOIN pgflight._vacuum_horizon() h(xmin_age, held_s, pid) ON (true));

COMMENT ON VIEW pgflight.engine_health IS 'Gauges: ready, leased, expired leases not yet reclaimed, attempts over their deadline but still heartbeating (C15), parked (counts of the workspaces the login may read), workers seen in the last 60 s (null unless the login reads every workspace); the oldest xmin holding back vacuum (age, seconds held, pid), NOTIFY queue usage, dead tuples of the hot tables, seconds since the last sweep pass, the > 5 min flag, age(datfrozenxid).';

GRANT SELECT ON TABLE pgflight.engine_health TO pgflight_reader;
GRANT SELECT ON TABLE pgflight.engine_health TO pgflight_operator;

commit;
