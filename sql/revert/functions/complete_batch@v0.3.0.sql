-- Revert pgflight:functions/complete_batch@v0.3.0: restores the previous definition, deploy/functions/complete_batch@v0.2.0.sql (written by scripts/gen_sql_scripts.py)
begin;
set local role pgflight_owner;
drop function pgflight.complete_batch(bigint[], bigint[], text[]);

-- Complete many attempts in one transaction (the worker's batched hot path). Parallel arrays.
-- Never raises for a stale attempt: it reports outcome lease_lost or cancelled for that row,
-- records a stale_result_rejected event, and completes the others.
-- Errors: 22023 arrays of different lengths.
create or replace function pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[])
returns table (attempt_id bigint, outcome text)
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_i integer := 0;
begin
  if coalesce(cardinality(p_attempt_ids), 0) <> coalesce(cardinality(p_tokens), 0)
     or coalesce(cardinality(p_attempt_ids), 0) <> coalesce(cardinality(p_results), 0) then
    raise exception using errcode = '22023', message = 'attempt ids, tokens and results differ in length',
      hint = 'Pass one token and one result per attempt id, in the same order.';
  end if;
  -- outcomes come back in the order given, so the i-th row goes with the i-th token
  for attempt_id, outcome in
    select c.attempt_id, c.outcome from pgflight._complete_many(p_attempt_ids, p_tokens, p_results, pgflight._now()) c
  loop
    v_i := v_i + 1;
    if outcome <> 'succeeded' then
      perform pgflight._record_stale(attempt_id, p_tokens[v_i], 'complete');
    end if;
    return next;
  end loop;
end
$$;
comment on function pgflight.complete_batch(bigint[], bigint[], jsonb[]) is
  'Complete many held attempts; per row outcome succeeded | lease_lost | cancelled. Errors: 22023.';
grant execute on function pgflight.complete_batch(bigint[], bigint[], jsonb[]) to pgflight_worker;

commit;
