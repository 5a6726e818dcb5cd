-- Revert pgflight:internals/_lock_event_channel
begin;
set local role pgflight_owner;
drop function pgflight._lock_event_channel(bigint, text, text);
commit;
