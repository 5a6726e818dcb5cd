-- Revert pgflight:functions/wake_parked_keys@v0.9.0: restores the previous definition, deploy/functions/wake_parked_keys@v0.3.0.sql (written by scripts/gen_sql_scripts.py)
begin;
set local role pgflight_owner;

-- Sweep: the safety net of concurrency keys. A freed slot wakes one parked attempt of its key
-- (trigger step_attempts_key_slot_freed); should a chain ever break (an attempt woken and then
-- cancelled before it was claimed), this wakes, for at most p_limit keys with parked attempts,
-- as many as the key has free slots. Takes each key's lock with a try, like the claim: a key
-- being claimed right now is left for the next pass. Returns the attempts woken.
create or replace function pgflight.wake_parked_keys(p_limit integer default 1000)
returns integer
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_key record;
  v_free integer;
  v_woken integer := 0;
  v_n integer;
begin
  perform pgflight._require_lane('operator', null, 'wake_parked_keys');  -- issue 13: acts on every workspace
  for v_key in
    select distinct a.workspace_id, a.concurrency_key, a.concurrency_limit
      from pgflight.step_attempts a
     where a.status = 'queued' and a.available_after = 'infinity' and a.concurrency_key is not null
     limit greatest(p_limit, 0)
  loop
    continue when not pg_catalog.pg_try_advisory_xact_lock(pgflight._key_lock(v_key.workspace_id, v_key.concurrency_key));
    v_free := v_key.concurrency_limit - (select count(*) from pgflight.step_attempts a
                where a.workspace_id = v_key.workspace_id and a.concurrency_key = v_key.concurrency_key
                  and (a.status in ('claimed', 'running', 'cancel_requested')
                       or (a.status = 'queued' and a.available_after < 'infinity')))::integer;
    continue when v_free <= 0;
    update pgflight.step_attempts a set available_after = pgflight._now()
     where a.id in (select p.id from pgflight.step_attempts p
                     where p.workspace_id = v_key.workspace_id and p.concurrency_key = v_key.concurrency_key
                       and p.status = 'queued' and p.available_after = 'infinity'
                     order by p.priority desc, p.id
                     limit v_free
                       for update skip locked);
    get diagnostics v_n = row_count;
    v_woken := v_woken + v_n;
  end loop;
  return v_woken;
end
$$;
comment on function pgflight.wake_parked_keys(integer) is
  'Sweep: wake parked attempts of concurrency keys that have free slots (a safety net); returns the count.';
revoke execute on function pgflight.wake_parked_keys(integer) from public;
grant execute on function pgflight.wake_parked_keys(integer) to pgflight_operator;

commit;
