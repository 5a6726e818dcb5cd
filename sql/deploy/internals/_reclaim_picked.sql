-- Deploy pgflight:internals/_reclaim_picked

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
-- Its sections (section 1, the pick, is _reclaim's):
--   2. the outcome: what each attempt becomes (retry, dead_letter, cancel, run_ended) and its
--      error, its step locked SKIP LOCKED;
--   3. the locks and the split: the parents and runs of the steps that end, locked SKIP LOCKED;
--      the batch split by path (retried, ended, row by row, or left for the next pass);
--   4. the batch, set-based, all or nothing: the retries (4a, _reclaim_retry), then the ends
--      (4b, _reclaim_end);
--   5. row by row (_reclaim_rows): the cascades, and every row of a batch that raised.
-- The pieces run under this function's planner settings and declare the same.
CREATE OR REPLACE FUNCTION pgflight._reclaim_picked(p_now timestamp with time zone, p_ids bigint[]) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $_$
declare
  v_ids bigint[] := p_ids;
  -- per attempt of the batch, in attempt id order (section 2)
  v_outcomes text[];
  v_errors jsonb[];
  v_parents bigint[];
  v_runs bigint[];
  v_cascades boolean[];
  v_locked_parents bigint[];
  v_locked_runs bigint[];
  -- the batch split by path: retried, ended, row by row (with their outcomes and errors)
  v_retry bigint[];
  v_retry_errors jsonb[];
  v_end bigint[];
  v_end_outcome text[];
  v_end_errors jsonb[];
  v_rest bigint[];
  v_rest_errors jsonb[];
  v_count integer := 0;
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

  -- 3. the locks and the split. A step that ends needs its parent and (a root) its run locked
  -- too, SKIP LOCKED: in use, the attempt waits for the next pass
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
      -- 4a. the retries: ended, and a successor queued for each
      v_count := v_count + pgflight._reclaim_retry(p_now, v_retry, v_retry_errors);
    end if;
    if v_end is not null then
      -- 4b. the ends: dead letters and cancellations, their steps finished
      v_count := v_count + pgflight._reclaim_end(p_now, v_end, v_end_outcome, v_end_errors);
    end if;
  exception when others then
    -- some row raised: none of the batch was written; each row on its own below
    v_count := 0;
    v_rest := coalesce(v_rest, '{}') || coalesce(v_retry, '{}') || coalesce(v_end, '{}');
    v_rest_errors := coalesce(v_rest_errors, '{}') || coalesce(v_retry_errors, '{}') || coalesce(v_end_errors, '{}');
  end;

  -- 5. row by row: cascades, and a batch that raised (_reclaim_rows)
  if v_rest is not null then
    v_count := v_count + pgflight._reclaim_rows(p_now, v_rest, v_rest_errors);
  end if;
  return v_count;
end
$_$;

COMMENT ON FUNCTION pgflight._reclaim_picked(p_now timestamp with time zone, p_ids bigint[]) IS 'Internal: _reclaim''s second half: ends the attempts p_ids (picked and locked by _reclaim) as retries, dead letters or cancellations, set-based, a batch that raises redone row by row. Returns how many were reclaimed.';

REVOKE ALL ON FUNCTION pgflight._reclaim_picked(p_now timestamp with time zone, p_ids bigint[]) FROM PUBLIC;

commit;
