-- Deploy pgflight:internals/_key_slot_freed

begin;

set local role pgflight_owner;

-- A keyed attempt left the set that counts against its key (leased, or queued and woken): wake
-- the first parked attempt of the key. The shared row lock waits for a claimer that is parking
-- attempts of this key to commit, so a park and a release can never miss each other (the row is
-- created first if missing: a claimer that created it and has not committed is waited for by
-- the insert). Only engine functions lock these rows, each for a statement or a short claim.
CREATE OR REPLACE FUNCTION pgflight._key_slot_freed() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_scope text := 'key:' || old.workspace_id || ':' || old.concurrency_key;
begin
  insert into pgflight.engine_locks (scope) values (v_scope) on conflict do nothing;
  perform from pgflight.engine_locks l where l.scope = v_scope for share;
  update pgflight.step_attempts a set available_after = pgflight._now()
   where a.id = (select p.id from pgflight.step_attempts p
                  where p.workspace_id = old.workspace_id and p.concurrency_key = old.concurrency_key
                    and p.status = 'queued' and p.available_after = 'infinity'
                  order by p.priority desc, p.id
                  limit 1
                    for update skip locked);
  return null;
end
$$;

COMMENT ON FUNCTION pgflight._key_slot_freed() IS 'Internal trigger: a keyed attempt stopped holding or waiting for a slot; wake one parked attempt of its key.';

REVOKE ALL ON FUNCTION pgflight._key_slot_freed() FROM PUBLIC;

commit;
