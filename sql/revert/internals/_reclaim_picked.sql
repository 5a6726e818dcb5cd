-- Revert pgflight:internals/_reclaim_picked: restores the previous definition, deploy/internals/_reclaim_picked@v1.0.0.sql (written by scripts/gen_sql_scripts.py)

begin;

set local role pgflight_owner;

-- The rest of _reclaim for the attempts it picked and holds FOR UPDATE (p_ids).
-- Plans: the statements of the batch (2-4) run as EXECUTE ... USING, so each is planned once per
-- pass with the batch's arrays as constants (their lengths known, = any hashed): a generic plan,
-- cached from the sixth call of a session on, estimated each array at a default size and made
-- 1,000-row batches 1.5-3x slower. Up to @v0.6.0 the function had plan_cache_mode =
-- force_custom_plan for that, which also reached the foreign-key check of every queued attempt
-- (an SPI query per inserted row, planned again on each row under that setting): 11 % of a
-- drain's CPU in perf, 98 -> 80 us of backend CPU per reclaimed lease without it.
-- enable_seqscan off: every row is reached by primary key from the batch; a custom plan sized for
-- the batch hash-joined a sequential scan of step_attempts (all of it, on every pass of a drain).
-- enable_hashjoin and enable_mergejoin off too: with seq scans off, a
-- batch that is more than a few percent of the table was hash-joined to a full scan of the primary
-- key instead (step_attempts and steps in the retry statement, step_attempts and runs in the
-- classification: auto_explain, 5,000 of 20,000 leases, 0.2 s of each statement's 0.5-0.8 s), so
-- every pass of a drain still read whole tables, only by index; nested loops probe each key.
CREATE OR REPLACE FUNCTION pgflight._reclaim_picked(p_now timestamp with time zone, p_ids bigint[]) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $_$
declare
  v_ids bigint[] := p_ids;
  v_outcomes text[];
  v_errors jsonb[];
  v_parents bigint[];
  v_runs bigint[];
  v_cascades boolean[];
  v_locked_parents bigint[];
  v_locked_runs bigint[];
  v_retry bigint[];
  v_retry_errors jsonb[];
  v_end bigint[];
  v_end_outcome text[];
  v_end_errors jsonb[];
  v_rest bigint[];
  v_rest_errors jsonb[];
  v_fin_steps bigint[];
  v_fin text[];
  v_row record;
  v_i integer;
  v_count integer := 0;
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
  v_until timestamptz;
  v_top bigint;
  v_blocked bigint[] := '{}';
begin
  -- 2. their steps, in id order, SKIP LOCKED (an attempt whose step is in use waits for the next
  -- pass), and in the same statement what each attempt becomes and its error (the one place it is
  -- written: the batch and the row-by-row path below both take it from here). Every join is by
  -- primary key from the batch.
  execute $q$
  with c as (
    select a.id, s.parent_id, a.run_id,
           case when a.status = 'cancel_requested' then 'cancel'
                when r.status <> 'running' then 'run_ended'
                when s.failed_attempts + 1 >= s.max_attempts then 'dead_letter'
                else 'retry' end as outcome,
           -- its end may cancel more than itself (_cascade_root): a fail-fast parent still waiting
           -- for its children, or children of its own; such a row goes row by row, its subtree
           -- locked first. A sibling of a parent whose cascade already ran is ended in the batch.
           (coalesce(p.fail_fast, false)
              and exists (select from pgflight.step_attempts pa
                           where pa.step_id = p.id and pa.status = 'awaiting_children'))
             or s.children_pending > 0 as cascades,
           -- no fencing token: the error is shown to readers, and the token is a credential
           case when a.lease_expires_at < $2
                then jsonb_build_object('message', 'lease expired: the worker stopped heartbeating',
                                        'lease_expires_at', a.lease_expires_at)
                else jsonb_build_object('message', 'deadline exceeded: the attempt ran past max_runtime_s',
                                        'deadline_at', a.deadline_at) end as error
      from unnest($1) i(id)
      join pgflight.step_attempts a on a.id = i.id
      join pgflight.steps s on s.id = a.step_id
      join pgflight.runs r on r.id = a.run_id
      left join pgflight.steps p on p.id = s.parent_id
     order by s.id
       for update of s skip locked
  )
  -- the arrays in attempt id order, one sort for all of them (an aggregate's own order by is a
  -- sort each on PostgreSQL 15: six here, seven in the split below, 13 sorts of the batch a pass)
  select array_agg(c.id), array_agg(c.outcome), array_agg(c.error), array_agg(c.parent_id), array_agg(c.run_id),
         array_agg(c.cascades)
    from (select c.* from c order by c.id) c
  $q$ into v_ids, v_outcomes, v_errors, v_parents, v_runs, v_cascades using v_ids, p_now;

  -- a step that ends needs its parent and (a root) its run locked too, SKIP LOCKED: in use, the
  -- attempt waits for the next pass
  execute $q$
  select coalesce(array_agg(l.id), '{}') from (
    select p.id from pgflight.steps p
     where p.id in (select u.parent from unnest($1, $2, $3) u(parent, outcome, cascades)
                     where u.outcome <> 'retry' and not u.cascades)
     order by p.id
       for update skip locked) l
  $q$ into v_locked_parents using v_parents, v_outcomes, v_cascades;
  execute $q$
  select coalesce(array_agg(l.id), '{}') from (
    select r.id from pgflight.runs r
     where r.id in (select u.run from unnest($1, $2, $3) u(run, parent, outcome)
                     where u.outcome <> 'retry' and u.parent is null)
     order by r.id
       for update skip locked) l
  $q$ into v_locked_runs using v_runs, v_parents, v_outcomes;

  -- the batch split by path; membership in the locked sets by = any (a constant array under the
  -- custom plans this function runs on: hashed, not a rescan per row)
  execute $q$
  select array_agg(u.id) filter (where u.path = 'retry'), array_agg(u.error) filter (where u.path = 'retry'),
         array_agg(u.id) filter (where u.path = 'end'), array_agg(u.outcome) filter (where u.path = 'end'),
         array_agg(u.error) filter (where u.path = 'end'),
         array_agg(u.id) filter (where u.path = 'rest'), array_agg(u.error) filter (where u.path = 'rest')
    from (select u.*,
                 case when u.outcome = 'retry' then 'retry'
                      when u.cascades then 'rest'
                      when u.parent = any($7) or (u.parent is null and u.run = any($8))
                        then 'end'
                      end as path  -- null: its parent or run is in use, the next pass takes it
            from unnest($1, $2, $3, $4, $5, $6)
                   u(id, outcome, error, parent, run, cascades)
           order by u.id) u  -- in id order already (the arrays above): one sort of sorted rows
  $q$ into v_retry, v_retry_errors, v_end, v_end_outcome, v_end_errors, v_rest, v_rest_errors
      using v_ids, v_outcomes, v_errors, v_parents, v_runs, v_cascades, v_locked_parents, v_locked_runs;

  -- 4. the batch, set-based, all or nothing. No statement joins one CTE's rows to another's: each
  -- reads the rows the previous one returned (a join of two CTEs is planned on their default
  -- estimates, a nested loop rescanning one per row of the other: quadratic in the batch, which
  -- made batches of 10,000 slower per row than batches of 1,000 up to @v0.4.0)
  begin
    if v_retry is not null then
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
        using v_retry, v_retry_errors, p_now;

      -- the successors, queued. Their flow columns are copied from the attempt each replaces (the
      -- step's), so the fill trigger (step_attempts_fill_flow) has nothing to do.
      -- Their one foreign key (step_attempts_step_id_fkey) holds by construction: each
      -- names a step that statement 2 above locked FOR UPDATE in this transaction, and that the
      -- statement before this one updated, so no other session can delete it before this commits
      -- (a delete waits for the lock; a step deleted before the lock was never classified: the
      -- join dropped its attempt) and nothing in this transaction deletes steps. Its check is a
      -- per-row trigger, one SPI query per successor (9 % of a drain's backend CPU in the eighth
      -- session's perf profile), so a batch of at least 500 is inserted with
      -- session_replication_role = replica when the owner may set it (internals/_row_triggers,
      -- as submit_runs and purge_finished), and the setting is restored right after the insert,
      -- before any other write; an error in between rolls it back with the block's subtransaction.
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
      v_count := v_count + v_n;
      if v_notify then
        perform pgflight._notify_ready();
      end if;
    end if;

    if v_end is not null then
      -- $1 the attempts, $2 their outcomes, $3 their errors, $4 the time
      execute $q$
      with e as (
        select a.id, a.step_id, a.run_id, a.status as old_status, a.worker_id, o.outcome, o.error,
               s.failed_attempts, s.max_attempts, u.status as run_status,
               case when a.lease_expires_at < $4 then 'lease_expired' else 'deadline_exceeded' end as reason,
               case when o.outcome = 'dead_letter' then 'dead_letter' else 'cancelled' end as final
          from unnest($1, $2, $3) as o(id, outcome, error)
          join pgflight.step_attempts a on a.id = o.id
          join pgflight.steps s on s.id = a.step_id
          join pgflight.runs u on u.id = a.run_id
      ), ended as (
        update pgflight.step_attempts a
           set status = e.final, finished_at = $4,
               reason = case when e.outcome = 'cancel' then a.reason else e.reason end,
               error = case when e.outcome = 'cancel' then a.error else e.error end
          from e
         where a.id = e.id
        returning e.*
      ), bumped as (
        update pgflight.steps s set failed_attempts = s.failed_attempts + 1
          from ended e
         where s.id = e.step_id and e.outcome = 'dead_letter'
      ), logged as (
        insert into pgflight.events (at, run_id, step_id, attempt_id, from_status, to_status, worker_id, reason,
                                     actor, detail)
        select $4, e.run_id, e.step_id, e.id, e.old_status, e.final, e.worker_id,
               case when e.outcome = 'dead_letter' then e.reason else 'cancelled' end, 'reclaim',
               case e.outcome
                 when 'cancel' then jsonb_build_object('cause', 'lease_expired')
                 when 'run_ended' then jsonb_build_object('cause', e.reason, 'run_status', e.run_status)
                 else jsonb_build_object('failed_attempts', e.failed_attempts + 1, 'max_attempts', e.max_attempts,
                                         'retryable', true) end
          from ended e order by e.id
      )
      select array_agg(e.step_id order by e.step_id), array_agg(e.final order by e.step_id)
        from ended e
      $q$ into v_fin_steps, v_fin using v_end, v_end_outcome, v_end_errors, p_now;
      perform pgflight._steps_finished(v_fin_steps, v_fin, 'reclaim', p_now);
      v_count := v_count + cardinality(v_fin_steps);
    end if;
  exception when others then
    -- some row raised: none of the batch was written; each row on its own below
    v_count := 0;
    v_rest := coalesce(v_rest, '{}') || coalesce(v_retry, '{}') || coalesce(v_end, '{}');
    v_rest_errors := coalesce(v_rest_errors, '{}') || coalesce(v_retry_errors, '{}') || coalesce(v_end_errors, '{}');
  end;

  -- 5. row by row: cascades, and a batch that raised; each row read when its turn comes (a
  -- cascade before it may have ended it). A row whose cascade cannot take its locks now (NOWAIT),
  -- or that meets a transient error (a deadlock, a lock timeout, a serialization failure), is
  -- left as it is for the next pass: it still holds its lease row, and the next pass picks it
  -- again. A subtree found in use is remembered (v_blocked), so its other rows are left without
  -- trying again: one try per subtree and pass, not one per sibling. Past the pass's time budget
  -- (pgflight.reclaim_until, set by _reclaim) the remaining rows are left too.
  v_until := nullif(pg_catalog.current_setting('pgflight.reclaim_until', true), '')::timestamptz;
  for v_i in 1 .. coalesce(cardinality(v_rest), 0) loop
    exit when v_until is not null and pg_catalog.clock_timestamp() > v_until;
    select a.id, a.status, a.step_id, a.run_id, a.worker_id, a.lease_expires_at < p_now as lapsed,
           (a.status = 'cancel_requested' or s.failed_attempts + 1 >= s.max_attempts) as ends_step
      into v_row
      from pgflight.step_attempts a join pgflight.steps s on s.id = a.step_id
     where a.id = v_rest[v_i];
    continue when v_row.status not in ('claimed', 'running', 'cancel_requested');  -- a cascade ended it
    v_top := case when v_row.ends_step then pgflight._cascade_root(v_row.step_id) end;
    continue when v_top = any (v_blocked);
    v_count := v_count + 1;
    begin
      if v_top is not null then
        perform pgflight._lock_subtree(v_top, true);
      end if;
      if v_row.status = 'cancel_requested' then
        update pgflight.step_attempts set status = 'cancelled', finished_at = p_now where id = v_row.id;
        perform pgflight._event(v_row.run_id, v_row.step_id, v_row.id, 'cancel_requested', 'cancelled',
                                v_row.worker_id, 'cancelled', 'reclaim', jsonb_build_object('cause', 'lease_expired'));
        perform pgflight._step_finished(v_row.step_id, 'cancelled', 'reclaim');
      else
        perform pgflight._fail_attempt(v_row.id, v_row.status,
          case when v_row.lapsed then 'lease_expired' else 'timed_out' end, v_rest_errors[v_i], true, null,
          case when v_row.lapsed then 'lease_expired' else 'deadline_exceeded' end, 'reclaim');
      end if;
    exception
      when lock_not_available then
        v_count := v_count - 1;  -- a row of its subtree is in use: the next pass takes this row
        if v_top is not null then
          v_blocked := v_blocked || v_top;
        end if;
      when deadlock_detected or serialization_failure then
        v_count := v_count - 1;  -- transient: the next pass takes this row
      when others then
        perform pgflight._dead_letter_poisoned(v_row.id, sqlstate, sqlerrm, 'reclaim');
        if exists (select from pgflight.step_attempts a
                    where a.id = v_row.id and a.status in ('claimed', 'running', 'cancel_requested')) then
          v_count := v_count - 1;  -- left as it was (its subtree in use): the next pass takes it
        end if;
    end;
  end loop;
  return v_count;
end
$_$;

COMMENT ON FUNCTION pgflight._reclaim_picked(p_now timestamp with time zone, p_ids bigint[]) IS 'Internal: _reclaim''s second half: ends the attempts p_ids (picked and locked by _reclaim) as retries, dead letters or cancellations, set-based, a batch that raises redone row by row. Returns how many were reclaimed.';

REVOKE ALL ON FUNCTION pgflight._reclaim_picked(p_now timestamp with time zone, p_ids bigint[]) FROM PUBLIC;

commit;
