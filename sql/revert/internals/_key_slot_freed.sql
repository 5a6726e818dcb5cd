-- Revert pgflight:internals/_key_slot_freed
begin;
set local role pgflight_owner;
drop function pgflight._key_slot_freed();
commit;
