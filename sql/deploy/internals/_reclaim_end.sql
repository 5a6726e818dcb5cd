-- Deploy pgflight:internals/_reclaim_end

begin;

set local role pgflight_owner;

-- Reclaim's ends (_reclaim_picked's section 4b): the lapsed attempts p_ids (picked and locked by
-- _reclaim, their steps, parents and runs locked by _reclaim_picked) that end their steps, with
-- their outcomes p_outcomes ('dead_letter': no attempts left; 'cancel': a cancel was requested;
-- 'run_ended': the run is no longer running) and errors p_errors (same order). Each attempt ends
-- dead_letter or cancelled with its events row (actor reclaim), a dead letter counts its step's
-- failure, and the steps finish (_steps_finished: their parents and runs told). Set-based, all or
-- nothing; whatever cascades (a fail-fast parent, children of its own) is not here but row by
-- row (_reclaim_rows). Returns how many steps finished. The planner settings are
-- _reclaim_picked's (why, there).
CREATE OR REPLACE FUNCTION pgflight._reclaim_end(p_now timestamp with time zone, p_ids bigint[], p_outcomes text[], p_errors jsonb[]) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $_$
declare
  v_fin_steps bigint[];
  v_fin text[];
begin
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
  $q$ into v_fin_steps, v_fin using p_ids, p_outcomes, p_errors, p_now;
  perform pgflight._steps_finished(v_fin_steps, v_fin, 'reclaim', p_now);
  return cardinality(v_fin_steps);
end
$_$;

COMMENT ON FUNCTION pgflight._reclaim_end(p_now timestamp with time zone, p_ids bigint[], p_outcomes text[], p_errors jsonb[]) IS 'Internal (_reclaim_picked): ends the lapsed attempts p_ids that end their steps (outcomes dead_letter, cancel or run_ended), with their events rows, and finishes the steps, set-based. Returns how many steps finished.';

REVOKE ALL ON FUNCTION pgflight._reclaim_end(p_now timestamp with time zone, p_ids bigint[], p_outcomes text[], p_errors jsonb[]) FROM PUBLIC;

commit;
