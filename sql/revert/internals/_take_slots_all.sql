-- Revert pgflight:internals/_take_slots_all
begin;
set local role pgflight_owner;
drop function pgflight._take_slots_all(bigint[], integer[]);
commit;
