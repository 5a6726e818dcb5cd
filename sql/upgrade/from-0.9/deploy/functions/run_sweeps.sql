-- Deploy pgflight:functions/run_sweeps
begin;
set local role pgflight_owner;

-- Every sweep once, each bounded (expire_waits: timers due, event waits past their timeout and
-- emitted events past their retention, 1,000 of each at most). What pg_cron calls (through sweep_loop); also callable by hand
-- or any scheduler. Issue 18: the reclaim batch is sweep_state.reclaim_batch, doubled after a
-- pass that found a full batch, up to 5,000, back to 1,000 when a pass finds less (a pass stays
-- around a second, and its row locks with it); the loop starts the next pass at once while
-- batches come back full. Batches of 10,000 used to be slower per row than batches of 1,000: a
-- generic plan of _reclaim rescanned one CTE per row of another (quadratic in the batch), fixed
-- in the third session; the events partitions are kept (maintain_partitions)
-- when a minute of the engine clock has passed since the last time; the pass's end is recorded
-- (sweep_state.last_pass_at, engine_health's sweep lag). The state row is updated SKIP LOCKED: a
-- concurrent pass (by hand, beside the loop) does not wait for it.
create or replace function pgflight.run_sweeps()
returns table (sweep text, affected integer)
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_state pgflight.sweep_state;
  v_now timestamptz := pgflight._now();
  v_reclaimed integer;
begin
  perform pgflight._require_lane('operator', null, 'run_sweeps');  -- issue 13: acts on every workspace
  select s.* into v_state from pgflight.sweep_state s;
  v_reclaimed := pgflight.reclaim_expired(v_state.reclaim_batch);
  return query select 'reclaim_expired'::text, v_reclaimed;
  return query select 'wake_parents'::text, pgflight.wake_parents(1000);
  return query select 'expire_approvals'::text, pgflight.expire_approvals(1000);
  return query select 'expire_waits'::text, pgflight.expire_waits(1000);
  return query select 'enforce_budgets'::text, pgflight.enforce_budgets(1000);
  return query select 'fire_schedules'::text, pgflight.fire_schedules(1000);
  return query select 'wake_parked_keys'::text, pgflight.wake_parked_keys(1000);
  if v_state.last_partitions_at is null or abs(extract(epoch from v_now - v_state.last_partitions_at)) >= 60 then
    return query select 'maintain_partitions'::text, count(*)::integer from pgflight.maintain_partitions();
  end if;
  update pgflight.sweep_state s
     set last_pass_at = pgflight._now(),
         reclaim_batch = case when v_reclaimed >= v_state.reclaim_batch then least(v_state.reclaim_batch * 2, 5000)
                              else 1000 end
   where s.id in (select t.id from pgflight.sweep_state t for update skip locked);
end
$$;
comment on function pgflight.run_sweeps() is
  'Run every sweep once (the reclaim batch grown while a backlog lasts, partitions kept once a minute); '
  'returns rows affected per sweep.';
grant execute on function pgflight.run_sweeps() to pgflight_operator;

commit;
