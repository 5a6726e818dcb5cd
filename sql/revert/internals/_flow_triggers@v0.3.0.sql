-- Revert pgflight:internals/_flow_triggers@v0.3.0
begin;
set local role pgflight_owner;
drop function pgflight._key_slot_freed();
drop function pgflight._key_lock(bigint, text);
drop function pgflight._fill_attempt_flow();
commit;
