-- Deploy pgflight:internals/_reclaim_rows

begin;

set local role pgflight_owner;

-- Reclaim's attempts one by one (_reclaim_picked's section 5): the lapsed attempts p_ids (picked
-- and locked by _reclaim) whose end cascades, or whose batch raised, with their errors p_errors
-- (same order). Each row is read when its turn comes (a cascade before it may have ended it). A
-- row whose cascade cannot take its locks now (NOWAIT), or that meets a transient error (a
-- deadlock, a lock timeout, a serialization failure), is left as it is for the next pass: it still
-- holds its lease row, and the next pass picks it again. A subtree found in use is remembered
-- (v_blocked), so its other rows are left without trying again: one try per subtree and pass, not
-- one per sibling. Past the pass's time budget (pgflight.reclaim_until, set by _reclaim) the
-- remaining rows are left too. A row that raises anything else is dead-lettered as poisoned
-- (_dead_letter_poisoned). Returns how many were reclaimed. The planner settings are
-- _reclaim_picked's (why, there).
CREATE OR REPLACE FUNCTION pgflight._reclaim_rows(p_now timestamp with time zone, p_ids bigint[], p_errors jsonb[]) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $_$
declare
  v_row record;
  v_count integer := 0;
  v_until timestamptz;
  v_top bigint;
  v_blocked bigint[] := '{}';
begin
  v_until := nullif(pg_catalog.current_setting('pgflight.reclaim_until', true), '')::timestamptz;
  for v_i in 1 .. coalesce(cardinality(p_ids), 0) loop
    exit when v_until is not null and pg_catalog.clock_timestamp() > v_until;
    select a.id, a.status, a.step_id, a.run_id, a.worker_id, a.lease_expires_at < p_now as lapsed,
           (a.status = 'cancel_requested' or s.failed_attempts + 1 >= s.max_attempts) as ends_step
      into v_row
      from pgflight.step_attempts a join pgflight.steps s on s.id = a.step_id
     where a.id = p_ids[v_i];
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
          case when v_row.lapsed then 'lease_expired' else 'timed_out' end, p_errors[v_i], true, null,
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

COMMENT ON FUNCTION pgflight._reclaim_rows(p_now timestamp with time zone, p_ids bigint[], p_errors jsonb[]) IS 'Internal (_reclaim_picked): reclaims the lapsed attempts p_ids one by one (cascades first locked NOWAIT; rows in use, transient errors and rows past pgflight.reclaim_until left for the next pass; other errors dead-letter the row). Returns how many were reclaimed.';

REVOKE ALL ON FUNCTION pgflight._reclaim_rows(p_now timestamp with time zone, p_ids bigint[], p_errors jsonb[]) FROM PUBLIC;

commit;
