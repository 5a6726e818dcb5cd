-- Deploy pgflight:internals/_reclaim

begin;

set local role pgflight_owner;

-- Reclaim up to p_limit expired leases and overrun deadlines, set-based (a mass crash
-- leaves a million lapsed leases; row by row they drained at ~200/s). Every row it touches is
-- locked with SKIP LOCKED — the attempts, then their steps, then (for a step that ends) its parent
-- step and its run — so concurrent sweepers (cron, claim_batch) never process the same attempt
-- twice, a row a worker or a client transaction holds right now is left for the next pass, and a
-- pass never waits. Then, in one subtransaction, a few statements end the whole batch:
--   retry        lease_expired / timed_out, the step's counters, the next queued attempt after the
--                backoff, one events row each (the end) and the retry's queued on the new attempt
--                (queue_event_id and queue_delay_s, shown by run_events as the retry_scheduled row
--                _fail_attempt writes; tables/step_attempts_retry_queue_event);
--   dead letter  at the step's ceiling; cancelled when cancel_requested or under an ended run;
--                then _steps_finished once for the set (parent pokes and wakes, runs).
-- A step ending under a fail-fast parent (its cascade must lock the subtree first, _lock_cascade
-- NOWAIT) goes row by row. If the set statements raise, they are rolled back and the batch goes
-- row by row too: each row in a block of its own, a row that raises is dead-lettered
-- with its real error (_dead_letter_poisoned) and the sweep — and the claim_batch it runs in —
-- goes on. Costs nothing when no lease has lapsed (two index probes).
-- Two functions: _reclaim picks (its two statements on cached plans: claim_batch calls it on
-- every claim, and with nothing lapsed it costs the two index probes), _reclaim_picked ends
-- what was picked on custom plans.
CREATE OR REPLACE FUNCTION pgflight._reclaim(p_now timestamp with time zone, p_limit integer) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ids bigint[];
  v_left bigint[] := '{}';
  v_done integer := 0;
  v_until timestamptz;
begin
  -- Rows a batch left as they were (their subtree in use, a transient error, the budget spent) do
  -- not count against p_limit: they are kept out of the next pick of this call (v_left, still
  -- locked by it), and the call picks again until p_limit rows ended, nothing lapsed is left, or
  -- the time budget (pgflight.reclaim_budget_ms, default 1000, read per call; the rest waits for
  -- the next pass) is spent. So rows that cannot end now never crowd out the others, e.g. a
  -- lapsed lease of another workspace behind them in the pick's order.
  loop
    -- 1. the lapsed attempts, then overrun deadlines among the live leases: SKIP LOCKED. Not ordered
    -- by lease_expires_at: it has no index (a heartbeat stays a HOT update, tables/step_attempts_hot).
    -- Ordered by workspace_id instead, the order of the partial index of the leased rows
    -- (step_attempts_leased_ws_idx), so the pick walks that index and stops at the limit: a seq scan
    -- would read, on every pass of a drain, all the rows the earlier passes already reclaimed
    -- (quadratic over a mass crash). Every lapsed lease is taken within a few passes either way.
    select coalesce(array_agg(l.id), '{}') into v_ids from (
      select a.id from pgflight.step_attempts a
       where a.status in ('claimed', 'running', 'cancel_requested') and a.lease_expires_at < p_now
         and a.id <> all (v_left)
       order by a.workspace_id
       limit p_limit - v_done
         for update of a skip locked) l;
    if cardinality(v_ids) < p_limit - v_done then
      select v_ids || coalesce(array_agg(l.id), '{}') into v_ids from (
        select a.id from pgflight.step_attempts a
         where a.status in ('claimed', 'running') and a.deadline_at < p_now
           and (a.lease_expires_at >= p_now or a.lease_expires_at is null)
           and a.id <> all (v_left)
         order by a.deadline_at limit p_limit - v_done - cardinality(v_ids)
           for update of a skip locked) l;
    end if;
    if cardinality(v_ids) = 0 then
      return v_done;
    end if;
    if v_until is null then
      v_until := pg_catalog.clock_timestamp() + make_interval(secs =>
        coalesce(nullif(pg_catalog.current_setting('pgflight.reclaim_budget_ms', true), ''), '1000')::double precision / 1000);
      perform pg_catalog.set_config('pgflight.reclaim_until', v_until::text, true);
    end if;
    v_done := v_done + pgflight._reclaim_picked(p_now, v_ids);
    exit when v_done >= p_limit or pg_catalog.clock_timestamp() > v_until;
    -- what this batch left as it was; past ten times the limit of such rows the call stops too (a
    -- claim_batch's small reclaim does not walk a whole blocked fan-out; the sweep's limit is large)
    v_left := v_left || coalesce((select array_agg(a.id) from pgflight.step_attempts a
                                   where a.id = any (v_ids) and a.status in ('claimed', 'running', 'cancel_requested')), '{}');
    exit when cardinality(v_left) >= 10::bigint * p_limit;  -- bigint: a limit near 2^31 must not overflow (22003)
  end loop;
  return v_done;
end
$$;

COMMENT ON FUNCTION pgflight._reclaim(p_now timestamp with time zone, p_limit integer) IS 'Internal: reclaim at most p_limit attempts whose lease lapsed or whose deadline passed, set-based, SKIP LOCKED on every row, within a time budget (pgflight.reclaim_budget_ms, default 1000); a row that raises is dead-lettered alone, a row whose cascade is locked or that meets a transient error waits for the next pass and does not count against p_limit. Picks them (held FOR UPDATE) and gives them to _reclaim_picked.';

REVOKE ALL ON FUNCTION pgflight._reclaim(p_now timestamp with time zone, p_limit integer) FROM PUBLIC;

commit;
