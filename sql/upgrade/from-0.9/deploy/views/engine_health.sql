-- Deploy pgflight:views/engine_health
-- Read-only views for operators and readers. They run with the owner's rights, so readers need
-- no table privileges.
begin;
set local role pgflight_owner;

-- Issue 18 adds, at the end: what keeps the engine's hot tables from being vacuumed (the oldest
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
create or replace view pgflight.engine_health as
select (select count(*) from pgflight.step_attempts a where a.status = 'queued' and a.available_after <= (select pgflight._now())
           and (l.ws is null or a.workspace_id = any(l.ws))) as ready,
       (select count(*) from pgflight.step_attempts a where a.status in ('claimed', 'running', 'cancel_requested')
           and (l.ws is null or a.workspace_id = any(l.ws))) as leased,
       (select count(*) from pgflight.step_attempts a where a.status in ('claimed', 'running', 'cancel_requested')
           and a.lease_expires_at < (select pgflight._now())
           and (l.ws is null or a.workspace_id = any(l.ws))) as expired_not_reclaimed,
       (select count(*) from pgflight.step_attempts a where a.status in ('claimed', 'running')
           and a.deadline_at < (select pgflight._now()) and a.lease_expires_at >= (select pgflight._now())
           and (l.ws is null or a.workspace_id = any(l.ws))) as over_deadline_heartbeating,
       (select count(*) from pgflight.step_attempts a where a.status in ('awaiting_children', 'awaiting_approval')
           and (l.ws is null or a.workspace_id = any(l.ws))) as parked,
       case when l.ws is null then
         (select count(*) from pgflight.workers w where w.stopped_at is null
             and w.last_seen_at > (select pgflight._now()) - interval '60 seconds') end as workers_alive,
       h.xmin_age as oldest_xmin_age,
       h.held_s as oldest_xmin_held_s,
       h.pid as oldest_xmin_pid,
       pg_catalog.pg_notification_queue_usage() as notify_queue_usage,
       (select pg_catalog.jsonb_object_agg(t.relname, t.n_dead_tup order by t.relname)
          from pg_catalog.pg_stat_user_tables t
         where t.schemaname = 'pgflight'
           and t.relname in ('runs', 'steps', 'step_attempts', 'agent_runs', 'workers', 'flow_limits', 'sweep_state')) as dead_tuples,
       (select pg_catalog.date_part('epoch', (select pgflight._now()) - s.last_pass_at) from pgflight.sweep_state s) as sweep_lag_s,
       coalesce(h.held_s > 300, false) as oldest_xmin_over_5_min,
       (select pg_catalog.age(d.datfrozenxid) from pg_catalog.pg_database d
         where d.datname = pg_catalog.current_database()) as datfrozenxid_age
  from (select pgflight._lane_workspaces('reader') as ws) l
  left join pgflight._vacuum_horizon() h on true;
comment on view pgflight.engine_health is
  'Gauges: ready, leased, expired leases not yet reclaimed, attempts over their deadline but still heartbeating (C15), parked '
  '(counts of the workspaces the login may read), workers seen in the last 60 s (null unless the login reads every '
  'workspace); the oldest xmin holding back vacuum (age, seconds held, pid), NOTIFY queue usage, dead '
  'tuples of the hot tables, seconds since the last sweep pass, the > 5 min flag, age(datfrozenxid).';
grant select on pgflight.engine_health to pgflight_reader, pgflight_operator;

commit;
