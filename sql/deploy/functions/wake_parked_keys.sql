-- Deploy pgflight:functions/wake_parked_keys

begin;

set local role pgflight_owner;

-- Sweep: the safety net of concurrency keys. A freed slot wakes one parked attempt of its key
-- (trigger step_attempts_key_slot_freed); should a chain ever break (an attempt woken and then
-- cancelled before it was claimed), this wakes, for at most p_limit keys with parked attempts,
-- as many as the key has free slots. Takes each key's lock (its engine_locks row) with SKIP
-- LOCKED, like the claim: a key being claimed right now is left for the next pass. Then
-- reconciles the in-flight caps' slot counters with the attempts leased, each scope in a block of
-- its own whose waits are bounded (lock_timeout 100 ms, or the caller's when shorter): a scope
-- whose rows stay locked longer (a claim left open in a client transaction) is skipped this pass,
-- the others are reconciled. Last, deletes up to 1,000 key rows of keys with no queued or leased
-- attempt left (rows locked right now are kept). No lock taken here can be held by a login: the
-- key and slot locks were advisory keys any login could hold (a held slot key failed every pass
-- with 55P03). Returns the attempts woken.
CREATE OR REPLACE FUNCTION pgflight.wake_parked_keys(p_limit integer DEFAULT 1000) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
declare
  v_key record;
  v_scope record;
  v_lock text;
  v_free integer;
  v_woken integer := 0;
  v_n integer;
  v_timeout text := pg_catalog.current_setting('lock_timeout');
begin
  perform pgflight._require_lane('operator', null, 'wake_parked_keys');  -- acts on every workspace
  for v_key in
    select distinct a.workspace_id, a.concurrency_key, a.concurrency_limit
      from pgflight.step_attempts a
     where a.status = 'queued' and a.available_after = 'infinity' and a.concurrency_key is not null
     limit greatest(p_limit, 0)
  loop
    v_lock := 'key:' || v_key.workspace_id || ':' || v_key.concurrency_key;
    insert into pgflight.engine_locks (scope) values (v_lock) on conflict do nothing;
    continue when not exists (select from pgflight.engine_locks l where l.scope = v_lock for update skip locked);
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
  -- the in-flight caps' slot stripes reconciled with the attempts table (tables/flow_slots): a
  -- lease that left the leased set by a path that bypassed the trigger cannot keep its slot
  for v_scope in
    select l.workspace_id as scope, l.max_in_flight as cap from pgflight.workspace_limits l where l.max_in_flight is not null
    union all
    select 0, s.max_in_flight from pgflight.settings s where s.max_in_flight is not null
  loop
    begin
      if v_timeout = '0' or pg_catalog.date_part('epoch', v_timeout::interval) > 0.1 then
        perform pg_catalog.set_config('lock_timeout', '100ms', true);
      end if;
      perform pgflight._set_slot_cap(v_scope.scope, v_scope.cap);
      perform pg_catalog.set_config('lock_timeout', v_timeout, true);
    exception when lock_not_available then
      perform pg_catalog.set_config('lock_timeout', v_timeout, true);
      raise log 'pgflight.wake_parked_keys: slot scope % skipped this pass (its rows stay locked)', v_scope.scope;
    end;
  end loop;
  delete from pgflight.flow_slot_returns f
   where not exists (select from pgflight.flow_slots s where s.scope = f.scope);
  -- key rows of keys with nothing queued or leased (created again by the next claim of the key)
  delete from pgflight.engine_locks l
   where l.scope in (select k.scope from pgflight.engine_locks k
                      where k.scope like 'key:%'
                        -- (two probes, one per partial index: queued, leased)
                        and not exists (select from pgflight.step_attempts a
                                         where a.workspace_id = substring(k.scope from '^key:(\d+):')::bigint
                                           and a.concurrency_key = substring(k.scope from '^key:\d+:(.*)$')
                                           and a.status = 'queued')
                        and not exists (select from pgflight.step_attempts a
                                         where a.workspace_id = substring(k.scope from '^key:(\d+):')::bigint
                                           and a.concurrency_key = substring(k.scope from '^key:\d+:(.*)$')
                                           and a.status in ('claimed', 'running', 'cancel_requested'))
                      limit 1000
                        for update skip locked);
  return v_woken;
end
$_$;

COMMENT ON FUNCTION pgflight.wake_parked_keys(p_limit integer) IS 'Sweep: wake parked attempts of concurrency keys that have free slots (a safety net); returns the count.';

REVOKE ALL ON FUNCTION pgflight.wake_parked_keys(p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.wake_parked_keys(p_limit integer) TO pgflight_operator;

commit;
