-- Deploy pgflight:functions/enforce_budgets

begin;

set local role pgflight_owner;

-- Sweep, bounded by p_limit per pass:
-- 1. Release the USD reservation of every agent whose reserving attempt is no longer leased
--    (reclaimed, cancelled, failed): the reclaim path of C24. Rows a worker is writing right now
--    are skipped (SKIP LOCKED) and left for the next pass. The attempt that last reserved stays on
--    the agent run between iterations (tables/agent_runs_hot); an ended attempt's is cleared here
--    (counted only when it still held money), so agent_runs_reserved_idx holds live agents and the
--    ones ended since the last pass. Then the model-token windows older than two minutes are deleted.
-- 2. Cancel each tree over its cap: a run or agent budget whose spent_usd passed limit_usd, or
--    whose wall time (since started_at) passed max_wall_s, while it still has live steps (e.g. a
--    parent parked in awaiting_children while its children keep spending). A run budget cancels
--    the run; an agent budget cancels the agent's step and its subtree (its parent is poked).
--    The budget row is stamped exceeded_at, so a tree is cancelled once.
-- Locking: candidates are read without locks; the cancel locks attempts (deepest first) and only
-- then the budget row is stamped, the same order as the agent writes (attempt, then budget), so the
-- sweep cannot deadlock with a worker. Two sweeps may both cancel a tree; the second finds nothing
-- live. Returns reservations released plus trees cancelled.
-- Each reservation and each tree in a subtransaction of its own: one that raises is
-- skipped with a WARNING naming it, and the rest of the pass goes on; the next pass tries it again.
CREATE OR REPLACE FUNCTION pgflight.enforce_budgets(p_limit integer DEFAULT 1000) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_count integer := 0;
  v_row record;
  v_reason text;
begin
  perform pgflight._require_lane('operator', null, 'enforce_budgets');  -- acts on every workspace
  perform pgflight._check_limit(p_limit);  -- 22023 for a negative limit
  for v_row in
    select r.id, r.reserved_iteration is not null as held from pgflight.agent_runs r
      join pgflight.step_attempts a on a.id = r.reserved_attempt_id
     where r.reserved_attempt_id is not null and a.status not in ('claimed', 'running')
     order by r.id
     limit p_limit
       for update of r skip locked
  loop
    begin
      perform pgflight._release_reservation(v_row.id);
      if v_row.held then
        v_count := v_count + 1;
      end if;
    exception when others then
      raise warning 'pgflight: enforce_budgets skipped the reservation of agent run %: % (SQLSTATE %)',
        v_row.id, sqlerrm, sqlstate
        using hint = 'The next pass tries it again; the rest of this pass went on.';
    end;
  end loop;

  -- the model-token windows older than any rolling minute (tables/model_token_windows)
  delete from pgflight.model_token_windows w where w.bucket < v_now - interval '120 s';

  for v_row in
    select b.id, b.scope, b.run_id, b.step_id, b.limit_usd, b.spent_usd, b.max_wall_s, b.started_at
      from pgflight.budgets b
     where b.scope <> 'workspace_day' and b.exceeded_at is null
       and ((b.limit_usd is not null and b.spent_usd > b.limit_usd)
            or (b.max_wall_s is not null and v_now > b.started_at + make_interval(secs => b.max_wall_s)))
     order by b.id
     limit greatest(p_limit - v_count, 0)
  loop
    v_reason := case when v_row.limit_usd is not null and v_row.spent_usd > v_row.limit_usd
                     then format('budget_exceeded: spent %s USD of %s', v_row.spent_usd, v_row.limit_usd)
                     else format('budget_exceeded: wall time over %s s', v_row.max_wall_s) end;
    begin
      if v_row.scope = 'run' then
        perform pgflight.cancel_run(v_row.run_id, 'enforce_budgets', v_reason);
      elsif exists (select 1 from pgflight.step_attempts a where a.step_id = v_row.step_id
                     and a.status in ('queued', 'claimed', 'running', 'awaiting_children', 'awaiting_approval')) then
        perform pgflight.cancel_step(v_row.step_id, 'enforce_budgets', v_reason);
      end if;
      update pgflight.budgets set exceeded_at = v_now where id = v_row.id and exceeded_at is null;
      if found then
        v_count := v_count + 1;
      end if;
    exception when others then
      raise warning 'pgflight: enforce_budgets skipped budget % (% over its cap): % (SQLSTATE %)',
        v_row.id, v_row.scope, sqlerrm, sqlstate
        using hint = 'The next pass tries it again; the rest of this pass went on.';
    end;
  end loop;
  return v_count;
end
$$;

COMMENT ON FUNCTION pgflight.enforce_budgets(p_limit integer) IS 'Sweep: release reservations of lapsed attempts; prune model-token windows; cancel trees over their USD or wall-time cap. Returns the count.';

REVOKE ALL ON FUNCTION pgflight.enforce_budgets(p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.enforce_budgets(p_limit integer) TO pgflight_operator;

commit;
