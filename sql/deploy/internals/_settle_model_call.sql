-- Deploy pgflight:internals/_settle_model_call

begin;

set local role pgflight_owner;

-- The budgets of a recorded model call (record_model_call, after its costs row is claimed): the
-- call of p_usd settled and, when p_want, the next call (iteration p_iteration + 1, p_next_est_usd
-- USD on the budgets p_next_ids) admitted. Returns whether the next call was admitted.
-- - Reserved on the budgets the next call needs (or no next call wanted): one move, _move_budget's
--   two statements in one: the rows locked in id order (the materialised CTE's FOR UPDATE locks
--   every row, no outer qual is pushed into it), none moved if one refuses; the reservation
--   becomes the actual cost (its caps were checked when it was admitted) and the next call's is
--   taken, checked as an admission (spent + this cost + the next reservation within every cap,
--   every wall-time cap unexpired). Refused, _move_budget decides, and the call is settled alone.
-- - Reserved otherwise: settled alone (_move_budget 'settle').
-- - Unreserved: a stale reservation released, the iteration cap and the cost admitted together;
--   a refusal raises ZF007 (the caller's transaction stores nothing).
-- - Then the next call's admission on its own when it was not made above.
-- No SET clause: it runs with record_model_call's settings (search_path, generic plans, no
-- sequential scans); a SET clause would save and restore them at every call.
CREATE OR REPLACE FUNCTION pgflight._settle_model_call(p_run pgflight.agent_runs, p_iteration integer, p_usd numeric, p_reserved boolean, p_want boolean, p_next_est_usd numeric, p_next_ids bigint[], p_now timestamp with time zone) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
declare
  v_settled boolean := false;
  v_next boolean := false;
  v_want boolean := p_want;
  v_ids bigint[];
  v_reserve numeric;
  v_refusal jsonb;
begin
  if p_reserved and (not v_want or p_next_ids is not distinct from p_run.reserved_budget_ids) then
    v_ids := p_run.reserved_budget_ids;
    v_reserve := case when v_want then p_next_est_usd else 0 end;
    if coalesce(pg_catalog.cardinality(v_ids), 0) = 0 then
      v_settled := true;
    else
      with locked as materialized (
        select b.id,
               v_want and ((b.max_wall_s is not null and p_now > b.started_at + pg_catalog.make_interval(secs => b.max_wall_s))
                           or (b.limit_usd is not null
                               and b.spent_usd + b.reserved_usd - p_run.reserved_usd + v_reserve + p_usd > b.limit_usd))
                 as refuses
          from pgflight.budgets b where b.id = any (v_ids) order by b.id for update
      )
      update pgflight.budgets b
         set reserved_usd = greatest(b.reserved_usd + v_reserve - p_run.reserved_usd, 0),
             spent_usd = b.spent_usd + p_usd
       where b.id = any (v_ids) and not exists (select from locked x where x.refuses);
      v_settled := found;
    end if;
    if not v_settled and v_want then
      -- refused (or none of the rows is left): _move_budget decides and moves; refused, the call
      -- is settled alone below and the next one not asked again
      v_settled := pgflight._move_budget(v_ids, v_reserve, p_usd, p_run.reserved_usd, true, p_now,
                                         pg_catalog.format('agent_run=%s iteration=%s', p_run.id, p_iteration + 1)) is null;
    end if;
    v_next := v_settled and v_want;
    v_settled := v_settled or not v_want;  -- a settlement alone that found no row moved nothing
    v_want := false;
  end if;
  if v_settled then
    null;
  elsif p_reserved then
    perform pgflight._move_budget(p_run.reserved_budget_ids, 0, p_usd, p_run.reserved_usd, false, p_now, 'settle');
  else
    if p_run.reserved_iteration is not null then
      perform pgflight._move_budget(p_run.reserved_budget_ids, 0, 0, p_run.reserved_usd, false, p_now, 'release');
    end if;
    v_refusal := coalesce(pgflight._iteration_refusal(p_run, p_iteration),
                          pgflight._move_budget(pgflight._call_budget_ids(p_run, p_now), 0, p_usd, 0, true, p_now,
                                                pg_catalog.format('agent_run=%s iteration=%s unreserved', p_run.id, p_iteration)));
    if v_refusal is not null then
      perform pgflight._raise_budget_exceeded(v_refusal);
    end if;
  end if;
  if v_want then
    -- the next call's admission on its own (this call was not reserved, or on other budgets)
    v_next := pgflight._move_budget(p_next_ids, p_next_est_usd, 0, 0, true, p_now,
                                    pg_catalog.format('agent_run=%s iteration=%s', p_run.id, p_iteration + 1)) is null;
  end if;
  return v_next;
end
$$;

COMMENT ON FUNCTION pgflight._settle_model_call(p_run pgflight.agent_runs, p_iteration integer, p_usd numeric, p_reserved boolean, p_want boolean, p_next_est_usd numeric, p_next_ids bigint[], p_now timestamp with time zone) IS 'Internal (record_model_call): settle a recorded call''s cost on its budgets and admit the next call; returns whether the next call was admitted. ZF007 when an unreserved call crosses a cap.';

REVOKE ALL ON FUNCTION pgflight._settle_model_call(p_run pgflight.agent_runs, p_iteration integer, p_usd numeric, p_reserved boolean, p_want boolean, p_next_est_usd numeric, p_next_ids bigint[], p_now timestamp with time zone) FROM PUBLIC;

commit;
