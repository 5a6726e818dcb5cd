-- Revert pgflight:internals/_give_slots_back
begin;
set local role pgflight_owner;
drop function pgflight._give_slots_back(bigint[], smallint[], integer[]);
commit;
