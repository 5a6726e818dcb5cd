-- Deploy pgflight:internals/_move_budget

begin;

set local role pgflight_owner;

-- Move money on a set of budgets, atomically: reserved += p_reserve - p_release, spent += p_spend.
-- The rows are locked in id order first (SELECT ... FOR UPDATE returns each row's latest committed
-- version), so two transactions touching several budgets never deadlock and concurrent admissions
-- serialise on each row (C24). With p_check the move is an admission: under those locks every
-- budget must be within its wall time (max_wall_s since started_at) and satisfy
-- spent + reserved - p_release + p_reserve + p_spend <= limit; the first budget (in id order) that
-- does not is returned as a refusal {message, detail, hint} and nothing is moved. Returns null when
-- the money moved. Planned with seq scans off: the plans a session keeps were made
-- while budgets was small read the whole table at every move once it grew; jit off, so that
-- penalty cannot cross jit_above_cost.
CREATE OR REPLACE FUNCTION pgflight._move_budget(p_ids bigint[], p_reserve numeric, p_spend numeric, p_release numeric, p_check boolean, p_now timestamp with time zone, p_what text) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
declare
  v_b pgflight.budgets;
begin
  if p_ids is null or cardinality(p_ids) = 0 then
    return null;
  end if;
  -- one statement locks every row in id order (the materialised CTE's FOR UPDATE: no outer qual is
  -- pushed into it, so every row is locked) and, for an admission, returns the first that refuses
  with locked as materialized (
    select b.* from pgflight.budgets b where b.id = any (p_ids) order by b.id for update
  )
  select x.* into v_b
    from locked x
   where p_check
     and ((x.max_wall_s is not null and p_now > x.started_at + make_interval(secs => x.max_wall_s))
          or (x.limit_usd is not null and x.spent_usd + x.reserved_usd - p_release + p_reserve + p_spend > x.limit_usd))
   order by x.id
   limit 1;
  if found then
    if v_b.max_wall_s is not null and p_now > v_b.started_at + make_interval(secs => v_b.max_wall_s) then
      return jsonb_build_object(
        'message', format('budget exceeded: wall time of %s budget %s', v_b.scope, v_b.id),
        'detail',  format('scope=%s budget_id=%s cap=max_wall_s max_wall_s=%s started_at=%s now=%s (%s)',
                          v_b.scope, v_b.id, v_b.max_wall_s, v_b.started_at, p_now, p_what),
        'hint',    'The tree ran past its wall-time cap; raise max_wall_s for the run or agent, or end the work.');
    end if;
    return jsonb_build_object(
      'message', format('budget exceeded: %s budget %s has %s USD left, the call needs %s USD',
                        v_b.scope, v_b.id,
                        greatest(v_b.limit_usd - v_b.spent_usd - v_b.reserved_usd, 0)::numeric(16, 6),
                        (p_reserve + p_spend)::numeric(16, 6)),
      'detail',  format('scope=%s budget_id=%s cap=usd limit_usd=%s spent_usd=%s reserved_usd=%s needed_usd=%s (%s)',
                        v_b.scope, v_b.id, v_b.limit_usd, v_b.spent_usd, v_b.reserved_usd,
                        p_reserve + p_spend, p_what),
      'hint',    case v_b.scope
                   when 'workspace_day' then 'The workspace reached its daily USD cap (workspaces.daily_usd_cap); wait for the next UTC day or raise the cap.'
                   when 'run' then 'The run reached its USD cap (max_usd); raise it or end the run.'
                   else 'The agent''s tree reached its USD cap (max_usd of the agent); raise it or end the work.' end);
  end if;
  update pgflight.budgets b
     set reserved_usd = greatest(b.reserved_usd + p_reserve - p_release, 0),
         spent_usd = b.spent_usd + p_spend
   where b.id = any (p_ids);
  return null;
end
$$;

COMMENT ON FUNCTION pgflight._move_budget(p_ids bigint[], p_reserve numeric, p_spend numeric, p_release numeric, p_check boolean, p_now timestamp with time zone, p_what text) IS 'Internal: reserve / spend / release USD on budgets atomically; with p_check an admission that returns the refusal (nothing moved) instead of moving.';

REVOKE ALL ON FUNCTION pgflight._move_budget(p_ids bigint[], p_reserve numeric, p_spend numeric, p_release numeric, p_check boolean, p_now timestamp with time zone, p_what text) FROM PUBLIC;

commit;
