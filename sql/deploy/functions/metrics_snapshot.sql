-- Deploy pgflight:functions/metrics_snapshot

begin;

set local role pgflight_owner;

-- Read: every figure a Prometheus exporter needs, in one call, as (metric, labels, value) rows:
--   queue_ready, queue_delayed, in_flight, parked, oldest_ready_age_seconds   by workspace, recipe
--   claims_total                 claims ever made (the fencing-token sequence: one per claim)
--   dead_letters                 steps dead-lettered now (partial index)
--   expired_leases, sweep_lag_seconds   leases past expiry not yet reclaimed, and the oldest's age
--   workers_alive                workers heard from in the last 60 s
--   waits_parked, waits_oldest_age_seconds   steps parked on a timer or an event wait, and the
--                                oldest one's age, by workspace, kind (timer | event)
--   model_calls_today, input_tokens_today, output_tokens_today, usd_today   by workspace, model
--                                (UTC day; counters that restart at midnight, from costs_at_idx)
--   notification_queue_usage     pg_notification_queue_usage(), 0..1
--   oldest_xmin_age              age in transactions of the oldest snapshot xmin of running
--                                transactions (source transactions) and replication slots
--   events_delta                 transitions in the id window after p_events_after (at most
--                                p_max_events ids, skipping ids purged or never used), by kind: completions, failures, reclaims,
--                                dead_lettered, stale_writes_refused, claims (labels {kind})
--   events_cursor                the end of the window counted (pass it back as p_events_after)
-- The exporter adds events_delta to its own counters and passes events_cursor back, so each call
-- reads only the events since the previous one (at most p_max_events, through the primary key),
-- and a first call with p_events_after = 0 catches up on the log over several calls. Every other
-- figure reads live rows through partial indexes or one day of costs: the cost does not grow with
-- finished history. An event whose transaction commits after a later id was counted is missed.
-- Tenancy: a login that may read only some workspaces gets the figures of those
-- (queues, dead letters, expired leases, costs, events of their runs); the engine-wide
-- claims_total and workers_alive only go to a login reading every workspace. The notification
-- queue and xmin ages are the cluster's health, no tenant's data.
-- Errors: 22023 bad p_max_events.
CREATE OR REPLACE FUNCTION pgflight.metrics_snapshot(p_events_after bigint DEFAULT 0, p_max_events integer DEFAULT 100000) RETURNS TABLE(metric text, labels jsonb, value double precision)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_day timestamptz := date_trunc('day', v_now at time zone 'UTC') at time zone 'UTC';
  v_after bigint := coalesce(p_events_after, 0);
  v_last bigint;
  v_lanes bigint[] := pgflight._lane_workspaces('reader');  -- null: every workspace
begin
  perform pgflight._require_limit('max_events', p_max_events, 10000000);
  return query
  select m.metric, jsonb_build_object('workspace', q.workspace, 'recipe', q.recipe), m.value
    from pgflight.queue_depths() q,
         lateral (values ('queue_ready', q.ready::double precision), ('queue_delayed', q.delayed::double precision),
                         ('in_flight', q.in_flight::double precision), ('parked', q.parked::double precision),
                         ('oldest_ready_age_seconds', q.oldest_ready_s)) m(metric, value);

  return query
  select 'claims_total', '{}'::jsonb,
         (select case when s.is_called then s.last_value else 0 end from pgflight.fencing_tokens s)::double precision
   where v_lanes is null;

  return query
  select 'dead_letters', '{}'::jsonb, count(*)::double precision
    from pgflight.step_attempts a
    join pgflight.steps s on s.id = a.step_id and s.last_attempt_no = a.attempt_no
   where a.status = 'dead_letter'
     and (v_lanes is null or exists (select from pgflight.runs r
                                      where r.id = a.run_id and r.workspace_id = any(v_lanes)));

  return query
  select x.metric, '{}'::jsonb, x.value
    from (select count(*)::double precision as n,
                 coalesce(extract(epoch from v_now - min(a.lease_expires_at)), 0)::double precision as lag
            from pgflight.step_attempts a
           where a.status in ('claimed', 'running', 'cancel_requested') and a.lease_expires_at < v_now
             and (v_lanes is null or exists (select from pgflight.runs r
                                              where r.id = a.run_id and r.workspace_id = any(v_lanes)))) e,
         lateral (values ('expired_leases', e.n), ('sweep_lag_seconds', e.lag)) x(metric, value);

  if v_lanes is null then  -- engine-wide: for a login reading every workspace only
    return query
    select 'workers_alive', '{}'::jsonb, count(*)::double precision
      from pgflight.workers w
     where w.stopped_at is null and w.last_seen_at > v_now - interval '60 seconds';
  end if;

  return query
  select m.metric, jsonb_build_object('workspace', w.name, 'model', c.model), m.value
    from (select c.workspace_id, c.model, count(*) as calls, sum(c.input_tokens) as input_tokens,
                 sum(c.output_tokens) as output_tokens, sum(c.usd) as usd
            from pgflight.costs c
           where c.at >= v_day and (v_lanes is null or c.workspace_id = any(v_lanes))
           group by 1, 2) c
    join pgflight.workspaces w on w.id = c.workspace_id,
         lateral (values ('model_calls_today', c.calls::double precision),
                         ('input_tokens_today', c.input_tokens::double precision),
                         ('output_tokens_today', c.output_tokens::double precision),
                         ('usd_today', c.usd::double precision)) m(metric, value);

  -- waits (docs/waiting.md): steps parked on a pending timer or event wait, and the age of the
  -- oldest, by workspace and kind (the pending-wait indexes: every pending wait has a due time or
  -- is an event wait)
  return query
  select x.metric, jsonb_build_object('workspace', ws.name, 'kind', g.kind), x.value
    from (select w.workspace_id, w.kind, count(*) as n, extract(epoch from v_now - min(w.requested_at)) as oldest
            from pgflight.waits w
           where w.outcome is null and w.parked_attempt_id is not null
             and (v_lanes is null or w.workspace_id = any(v_lanes))
           group by 1, 2) g
    join pgflight.workspaces ws on ws.id = g.workspace_id,
         lateral (values ('waits_parked', g.n::double precision),
                         ('waits_oldest_age_seconds', greatest(g.oldest, 0)::double precision)) x(metric, value);

  return query
  select 'notification_queue_usage', '{}'::jsonb, pg_notification_queue_usage();

  return query
  select 'oldest_xmin_age', '{"source": "transactions"}'::jsonb,
         age(pg_snapshot_xmin(pg_current_snapshot())::text::xid)::double precision
  union all
  select 'oldest_xmin_age', '{"source": "replication_slots"}'::jsonb,
         coalesce(max(greatest(age(sl.xmin), age(sl.catalog_xmin))), 0)::double precision
    from pg_replication_slots sl;

  -- the id window of this call: from the cursor (or the oldest event left, after a purge) for at
  -- most p_max_events ids, never past the newest event; every end read from an index. The events
  -- ids are the events rows' and those the attempts took for the transitions run_events derives
  -- (a started claim, a success from running).
  v_after := greatest(v_after, coalesce(least((select min(e.id) from pgflight.events e),
                                              (select min(a.claim_event_id) from pgflight.step_attempts a),
                                              (select min(a.finish_event_id) from pgflight.step_attempts a)) - 1,
                                        v_after));
  -- (a cursor within p_max_events of the largest bigint ends the window there: the sum overflowed)
  v_last := least(case when v_after > 9223372036854775807 - p_max_events then 9223372036854775807
                       else v_after + p_max_events end,
                  coalesce(greatest((select max(e.id) from pgflight.events e),
                                    (select max(a.claim_event_id) from pgflight.step_attempts a),
                                    (select max(a.finish_event_id) from pgflight.step_attempts a)),
                           v_after));
  return query
  select k.metric, k.labels, k.value
    from (
      -- one pass over the window, through the primary key and the two event-id indexes
      select count(*) filter (where e.to_status = 'succeeded') as completions,
             count(*) filter (where e.to_status in ('failed', 'lease_expired', 'timed_out', 'dead_letter')) as failures,
             count(*) filter (where e.reason = 'lease_expired') as reclaims,
             count(*) filter (where e.to_status = 'dead_letter') as dead_lettered,
             count(*) filter (where e.reason = 'stale_result_rejected') as stale_writes_refused,
             count(*) filter (where e.reason = 'claimed') as claims
        from (select e.run_id, e.to_status, e.reason from pgflight.events e
               where e.id > v_after and e.id <= v_last
              union all
              select a.run_id, 'running', 'claimed' from pgflight.step_attempts a
               where a.claim_event_id > v_after and a.claim_event_id <= v_last
              union all
              select a.run_id, 'succeeded', 'succeeded' from pgflight.step_attempts a
               where a.finish_event_id > v_after and a.finish_event_id <= v_last) e
       where (v_lanes is null or exists (select from pgflight.runs r
                                          where r.id = e.run_id and r.workspace_id = any(v_lanes)))) w,
         lateral (values
           ('events_delta', '{"kind": "completions"}'::jsonb, w.completions::double precision),
           ('events_delta', '{"kind": "failures"}', w.failures),
           ('events_delta', '{"kind": "reclaims"}', w.reclaims),
           ('events_delta', '{"kind": "dead_lettered"}', w.dead_lettered),
           ('events_delta', '{"kind": "stale_writes_refused"}', w.stale_writes_refused),
           ('events_delta', '{"kind": "claims"}', w.claims),
           ('events_cursor', '{}', greatest(v_last, v_after)::double precision)) k(metric, labels, value);
end
$$;

COMMENT ON FUNCTION pgflight.metrics_snapshot(p_events_after bigint, p_max_events integer) IS 'Read: the figures of the Prometheus exporter as (metric, labels, value) rows; events are counted from the cursor p_events_after on (at most p_max_events). Errors: 22023.';

REVOKE ALL ON FUNCTION pgflight.metrics_snapshot(p_events_after bigint, p_max_events integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.metrics_snapshot(p_events_after bigint, p_max_events integer) TO pgflight_reader;
GRANT ALL ON FUNCTION pgflight.metrics_snapshot(p_events_after bigint, p_max_events integer) TO pgflight_operator;

commit;
