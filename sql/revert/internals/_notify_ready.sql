-- Revert pgflight:internals/_notify_ready
begin;
set local role pgflight_owner;
drop function pgflight._notify_ready();
commit;
