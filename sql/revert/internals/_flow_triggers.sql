-- Revert pgflight:internals/_flow_triggers
begin;
set local role pgflight_owner;
drop function pgflight._key_slot_freed();
drop function pgflight._key_lock(bigint, text);
drop function pgflight._fill_attempt_flow();
commit;
