-- Deploy pgflight:internals/_return_slots

begin;

set local role pgflight_owner;

-- A leased attempt counted against a cap (slots <> 0) leaves the leased set: append one return
-- per cap it held, in the same transaction (an insert: never waits on a stripe a claimer holds),
-- and clear its bits so no later change returns them twice. A BEFORE trigger, so the clearing is
-- part of the same row version.
CREATE OR REPLACE FUNCTION pgflight._return_slots() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  insert into pgflight.flow_slot_returns (scope)
  select x.scope from (values (1, 0::bigint), (2, old.workspace_id)) x(bit, scope)
   where old.slots & x.bit <> 0;
  new.slots := 0;
  return new;
end
$$;

COMMENT ON FUNCTION pgflight._return_slots() IS 'Internal trigger: a leased attempt counted against caps stopped being leased; return its slots.';

REVOKE ALL ON FUNCTION pgflight._return_slots() FROM PUBLIC;

commit;
