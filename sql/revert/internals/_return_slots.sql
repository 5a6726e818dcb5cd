-- Revert pgflight:internals/_return_slots
begin;
set local role pgflight_owner;
drop function pgflight._return_slots();
commit;
