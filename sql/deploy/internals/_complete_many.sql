-- Deploy pgflight:internals/_complete_many

begin;

set local role pgflight_owner;

-- The core of successful completion, set-based, shared by complete_step and complete_batch:
-- a batch of n attempts costs a handful of statements, not n of each. For each attempt given
-- (parallel arrays) the outcome is 'succeeded', or 'lease_lost' / 'cancelled' when it is not
-- held with that token (then nothing changed for it). Compare-and-swap on (id, token, leased
-- status): of a completion racing a reclaim or a cancel, whichever locks the row first wins.
-- What follows (pokes, wakes, runs) is _steps_finished, the same routine as every other path.
-- Locks are taken in a fixed order — attempts by id, then parents by id, then runs — so batches
-- cannot deadlock with each other, with heartbeat (ids ascending) or with cancel (attempts first).
-- Plans: generic from the first call, no sequential scan. A custom plan per call cost
-- about 1 ms of each complete_batch in the peers' burn-down (pg_stat_statements, track_planning).
-- A generic plan sizes every array at ten rows, so no statement here joins one array to another
-- (a nested loop over two unnests is quadratic in the batch: 25 s for 10,000 attempts).
-- Server CPU per step: the lock, the success, its events rows and, for a batch of
-- roots only (no step has a parent: the burn-down's shape), their runs' end are one statement;
-- such a batch needs nothing else of _steps_finished (a success cancels nothing below it and pokes
-- no parent), so it is not called. A batch with a child goes through _steps_finished whole, in its
-- lock order. When every attempt given succeeded, once each, the outcomes are not read back.
CREATE OR REPLACE FUNCTION pgflight._complete_many(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_now timestamp with time zone) RETURNS TABLE(attempt_id bigint, outcome text)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    AS $$
declare
  v_ids bigint[];
  v_steps bigint[];
  v_children boolean;
begin
  with locked as (
    -- 1. lock the attempts still held with these tokens by workers of this login (one
    -- primary-key probe of workers per attempt; another login's attempt is not held by the caller),
    -- in id order (the sort below the row locks), each with its result: an attempt given twice
    -- with its token keeps the first result given.
    -- Each given attempt is probed by primary key (a LATERAL subquery behind OFFSET 0, which the
    -- planner keeps as the inner side of a nested loop), and its status and login are checked on
    -- the locked row (the row as it is now, after the lock). Written as a join with the status in
    -- its WHERE, the generic plan this function runs on could read the partial index of the
    -- leased attempts instead: after an ANALYZE that saw few leases it estimated that index at
    -- one row and scanned all of it once per given attempt (CI: a 10,000-attempt
    -- complete_batch took 6.4 s of CPU instead of 0.4; tests_py/test_scenarios_attack.py). Only
    -- the primary key answers id = and a token; a row locked here that fails the checks (another
    -- token's success, a cancelled attempt) is not written, and its lock ends with the transaction.
    select a.id, q.result
      from (select distinct on (u.id, u.token) u.id, u.token, u.result
              from unnest(p_attempt_ids, p_tokens, p_results) with ordinality as u(id, token, result, ord)
             order by u.id, u.token, u.ord) q
      cross join lateral (
        select a0.id, a0.status, a0.worker_id from pgflight.step_attempts a0
         where a0.id = q.id and a0.fencing_token = q.token
        offset 0) a
     where a.status in ('claimed', 'running')
       and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user)
     order by a.id
       for update of a
  ), done as (
    -- 2. succeed them. A success from running takes an events id onto the attempt
    -- (finish_event_id; run_events shows it as the 'succeeded' row) instead of an events row; a
    -- success straight from claimed (never started) still writes its events row. (The rows
    -- locked above: a row that changed between this statement's snapshot and its lock is
    -- updated as it is now, its status rechecked by the lock.) The steps row by primary key,
    -- for the parent.
    update pgflight.step_attempts a
       set status = 'succeeded', finished_at = p_now, result = l.result,
           started_at = coalesce(a.started_at, a.claimed_at),
           finish_event_id = case when a.status = 'running' then nextval('pgflight.events_id_seq') end
      from locked l, pgflight.steps s
     where a.id = l.id and s.id = a.step_id
    returning a.id, a.step_id, a.run_id, a.worker_id, a.finish_event_id, s.parent_id
  ), logged as (
    -- the events row of a success straight from claimed
    insert into pgflight.events (at, run_id, step_id, attempt_id, from_status, to_status, worker_id, reason)
    select p_now, d.run_id, d.step_id, d.id, 'claimed', 'succeeded', d.worker_id, 'succeeded'
      from done d
     where d.finish_event_id is null
  ), ended as (
    -- 3. a batch of roots only: each ends its run (rule 4 of _steps_finished, for a success)
    update pgflight.runs r
       set status = 'succeeded', finished_at = p_now
      from done d
     where r.id = d.run_id and r.status = 'running'
       and not exists (select from done c where c.parent_id is not null)
  )
  select array_agg(d.id), array_agg(d.step_id), coalesce(bool_or(d.parent_id is not null), false)
    into v_ids, v_steps, v_children
    from done d;

  -- 3'. a batch with a child: what follows the steps' ends (pokes, wakes, runs), written once for
  -- every path
  if v_children then
    perform pgflight._steps_finished(v_steps, array_fill('succeeded'::text, array[cardinality(v_steps)]), null, p_now);
  end if;

  if cardinality(v_ids) = cardinality(p_attempt_ids) then
    -- each attempt given succeeded here, none given twice: nothing to read back
    return query select u.id, 'succeeded'::text from unnest(p_attempt_ids) as u(id);
    return;
  end if;
  -- the others, in one statement: cancelled only for an attempt of this login's own workers; any
  -- other attempt (another login's, another workspace's, whatever token) is lease_lost, exactly as
  -- an unknown one, so its status is never told
  return query
  select q.id,
         case when a.status = 'succeeded' and a.fencing_token = q.token and q.id = any (v_ids) then 'succeeded'
              when a.status in ('cancel_requested', 'cancelled') and a.fencing_token = q.token
                   and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user)
                then 'cancelled'
              else 'lease_lost' end
    from unnest(p_attempt_ids, p_tokens) with ordinality as q(id, token, ord)
    left join pgflight.step_attempts a on a.id = q.id
   order by q.ord;
end
$$;

COMMENT ON FUNCTION pgflight._complete_many(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_now timestamp with time zone) IS 'Internal: complete attempts set-based; per attempt succeeded | lease_lost | cancelled.';

REVOKE ALL ON FUNCTION pgflight._complete_many(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_now timestamp with time zone) FROM PUBLIC;

commit;
