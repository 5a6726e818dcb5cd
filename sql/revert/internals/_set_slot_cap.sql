-- Revert pgflight:internals/_set_slot_cap
begin;
set local role pgflight_owner;
drop function pgflight._set_slot_cap(bigint, integer);
commit;
