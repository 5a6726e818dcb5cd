-- Revert pgflight:functions/enforce_budgets@v0.3.0: restores the previous definition, deploy/functions/enforce_budgets@v0.2.0.sql (written by scripts/gen_sql_scripts.py)
begin;
set local role pgflight_owner;

-- Sweep, bounded by p_limit per pass:
-- 1. Release the USD reservation of every agent whose reserving attempt is no longer leased
--    (reclaimed, cancelled, failed): the reclaim path of C24. Rows a worker is writing right now
--    are skipped (SKIP LOCKED) and left for the next pass.
-- 2. Cancel each tree over its cap: a run or agent budget whose spent_usd passed limit_usd, or
--    whose wall time (since started_at) passed max_wall_s, while it still has live steps (e.g. a
--    parent parked in awaiting_children while its children keep spending). A run budget cancels
--    the run; an agent budget cancels the agent's step and its subtree (its parent is poked).
--    The budget row is stamped exceeded_at, so a tree is cancelled once.
-- Locking: candidates are read without locks; the cancel locks attempts (deepest first) and only
-- then the budget row is stamped, the same order as the agent writes (attempt, then budget), so the
-- sweep cannot deadlock with a worker. Two sweeps may both cancel a tree; the second finds nothing
-- live. Returns reservations released plus trees cancelled.
create or replace function pgflight.enforce_budgets(p_limit integer default 1000)
returns integer
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_now timestamptz := pgflight._now();
  v_count integer := 0;
  v_row record;
  v_reason text;
begin
  for v_row in
    select r.id from pgflight.agent_runs r
      join pgflight.step_attempts a on a.id = r.reserved_attempt_id
     where r.reserved_attempt_id is not null and a.status not in ('claimed', 'running')
     order by r.id
     limit p_limit
       for update of r skip locked
  loop
    perform pgflight._release_reservation(v_row.id);
    v_count := v_count + 1;
  end loop;

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
  end loop;
  return v_count;
end
$$;
comment on function pgflight.enforce_budgets(integer) is
  'Sweep: release reservations of lapsed attempts; cancel trees over their USD or wall-time cap. Returns the count.';
grant execute on function pgflight.enforce_budgets(integer) to pgflight_operator;

commit;
