-- Deploy pgflight:internals/_reclaim_retry

begin;

set local role pgflight_owner;

-- Reclaim's retries (_reclaim_picked's section 4a): the lapsed attempts p_ids (picked and locked
-- by _reclaim, their steps locked by _reclaim_picked) whose steps have attempts left, with their
-- errors p_errors (same order). Each attempt ends (lease_expired, or timed_out past its deadline)
-- with its events row, its step counts the failure, and a successor is queued after the step's
-- backoff; all set-based, in two statements. Returns how many were retried. Raises whatever a
-- row raises, having written nothing of the batch (the caller's subtransaction): _reclaim_picked
-- then takes the rows one by one. The planner settings are _reclaim_picked's (why, there).
CREATE OR REPLACE FUNCTION pgflight._reclaim_retry(p_now timestamp with time zone, p_ids bigint[], p_errors jsonb[]) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $_$
declare
  v_n integer;
  v_notify boolean;
  v_srr text;  -- session_replication_role to restore after the successors' insert (null: not switched)
  v_q_ids bigint[];
  v_q_steps bigint[];
  v_q_runs bigint[];
  v_q_nos integer[];
  v_q_recipes text[];
  v_q_prios integer[];
  v_q_ws bigint[];
  v_q_keys text[];
  v_q_limits integer[];
  v_q_events bigint[];
  v_q_delays double precision[];
begin
  -- the attempts end, their steps count the failure, their successors are queued (ids drawn
  -- here, so the end's events row and the successor are written from one row), with the end's
  -- events row; the retry's queued is the successor's queue_event_id (its backoff in
  -- queue_delay_s), which run_events shows as the retry_scheduled row (one events
  -- row and its two index entries less per lease). Both events ids drawn here, a lease's end
  -- then its queued, lease by lease, so the log keeps the order it had with two events rows.
  -- $1 the attempts, $2 their errors, $3 the time. The successors are written by the next
  -- statement, from the rows this one returns (see there).
  execute $q$
  with r0 as (
    select a.id, a.step_id, a.run_id, a.status as old_status, a.worker_id, a.recipe, a.priority,
           a.workspace_id, a.concurrency_key, a.concurrency_limit, a.lease_expires_at < $3 as lapsed,
           i.error, s.failed_attempts + 1 as failed, s.last_attempt_no + 1 as next_no, s.backoff
      from unnest($1, $2) i(id, error)
      join pgflight.step_attempts a on a.id = i.id
      join pgflight.steps s on s.id = a.step_id
  ), delays as (
    -- once per distinct (failures, backoff): after a mass crash that is a handful, not a row each;
    -- clamped to [0, 30 days] whatever was stored, as _fail_attempt
    select k.failed, k.backoff,
           least(greatest(coalesce(pgflight._backoff_s(k.failed, k.backoff), 0), 0),
                 pgflight._limit('delay_s')) as delay
      from (select distinct r0.failed, r0.backoff from r0) k
  ), r as (
    select x.*, nextval('pgflight.step_attempts_id_seq') as new_id,
           nextval('pgflight.events_id_seq') as end_event_id,
           nextval('pgflight.events_id_seq') as queue_event_id
      from (select r0.*, d.delay,
                   case when r0.lapsed then 'lease_expired' else 'timed_out' end as to_status,
                   case when r0.lapsed then 'lease_expired' else 'deadline_exceeded' end as reason
              from r0 join delays d on d.failed = r0.failed and d.backoff is not distinct from r0.backoff
             order by r0.id) x
  ), ended as (
    update pgflight.step_attempts a
       set status = r.to_status, finished_at = $3, reason = r.reason, error = r.error
      from r
     where a.id = r.id
    returning r.id, r.step_id, r.run_id, r.old_status, r.worker_id, r.recipe, r.priority, r.workspace_id,
              r.concurrency_key, r.concurrency_limit, r.failed, r.next_no, r.delay, r.to_status, r.reason,
              r.new_id, r.end_event_id, r.queue_event_id  -- not the error nor the backoff (jsonb):
                                                          -- read by no statement below
  ), bumped as (
    update pgflight.steps s set failed_attempts = e.failed, last_attempt_no = e.next_no
      from ended e
     where s.id = e.step_id
  ), logged as (
    insert into pgflight.events (id, at, run_id, step_id, attempt_id, from_status, to_status, worker_id,
                                 reason, actor)
    select e.end_event_id, $3, e.run_id, e.step_id, e.id, e.old_status, e.to_status, e.worker_id, e.reason,
           'reclaim'
      from ended e order by e.id
  )
  -- the successors' columns side by side, in the lapsed attempts' order: one sort for all of
  -- them (an aggregate's own order by is a sort each on PostgreSQL 15)
  select count(*), coalesce(bool_or(e.delay <= 0), false), array_agg(e.new_id), array_agg(e.step_id),
         array_agg(e.run_id), array_agg(e.next_no), array_agg(e.recipe), array_agg(e.priority),
         array_agg(e.workspace_id), array_agg(e.concurrency_key), array_agg(e.concurrency_limit),
         array_agg(e.queue_event_id), array_agg(e.delay)
    from (select e.* from ended e order by e.id) e
  $q$ into v_n, v_notify, v_q_ids, v_q_steps, v_q_runs, v_q_nos, v_q_recipes, v_q_prios, v_q_ws,
           v_q_keys, v_q_limits, v_q_events, v_q_delays
    using p_ids, p_errors, p_now;

  -- the successors, queued. Their flow columns are copied from the attempt each replaces (the
  -- step's), so the fill trigger (step_attempts_fill_flow) has nothing to do.
  -- Their one foreign key (step_attempts_step_id_fkey) holds by construction: each
  -- names a step that _reclaim_picked (its section 2) locked FOR UPDATE in this transaction, and
  -- that the statement before this one updated, so no other session can delete it before this commits
  -- (a delete waits for the lock; a step deleted before the lock was never classified: the
  -- join dropped its attempt) and nothing in this transaction deletes steps. Its check is a
  -- per-row trigger, one SPI query per successor (9 % of a drain's backend CPU in a perf
  -- profile), so a batch of at least 500 is inserted with
  -- session_replication_role = replica when the owner may set it (internals/_row_triggers_off,
  -- as submit_runs and purge_finished), and the setting is restored right after the insert,
  -- before any other write; an error in between rolls it back with the subtransaction of
  -- _reclaim_picked's section 4.
  -- Only this insert runs so: the lapsed attempts' update above keeps its triggers
  -- (step_attempts_return_slots, step_attempts_key_slot_freed). So a trigger a DBA adds to
  -- step_attempts does not fire for these rows (docs/security.md). Below 500 (the reclaim a
  -- claim_batch runs, a sweep's first pass) the checks run: switching the setting resets the
  -- session's cached plans, which a worker's claims would pay for.
  -- $1.. the successors' columns, $11 their delays, $12 the time.
  v_srr := case when v_n >= 500 then pgflight._row_triggers_off() end;
  execute $q$
  insert into pgflight.step_attempts (id, step_id, run_id, attempt_no, recipe, priority, status,
                                      available_after, created_at, workspace_id, concurrency_key,
                                      concurrency_limit, queue_event_id, queue_delay_s)
  overriding system value
  select q.id, q.step_id, q.run_id, q.attempt_no, q.recipe, q.priority, 'queued',
         $12 + make_interval(secs => q.delay), $12, q.workspace_id, q.concurrency_key,
         q.concurrency_limit, q.queue_event_id, q.delay
    from unnest($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
           q(id, step_id, run_id, attempt_no, recipe, priority, workspace_id, concurrency_key,
             concurrency_limit, queue_event_id, delay)
  $q$ using v_q_ids, v_q_steps, v_q_runs, v_q_nos, v_q_recipes, v_q_prios, v_q_ws, v_q_keys, v_q_limits,
            v_q_events, v_q_delays, p_now;
  if v_srr is not null then
    perform pgflight._row_triggers_on(v_srr);  -- a definer of pgflight_privileged: the owner may not set it
  end if;
  if v_notify then
    perform pgflight._notify_ready();
  end if;
  return v_n;
end
$_$;

COMMENT ON FUNCTION pgflight._reclaim_retry(p_now timestamp with time zone, p_ids bigint[], p_errors jsonb[]) IS 'Internal (_reclaim_picked): ends the lapsed attempts p_ids whose steps have attempts left (lease_expired or timed_out, with their errors) and queues each step''s next attempt after its backoff, set-based. Returns how many.';

REVOKE ALL ON FUNCTION pgflight._reclaim_retry(p_now timestamp with time zone, p_ids bigint[], p_errors jsonb[]) FROM PUBLIC;

commit;
