-- Revert pgflight:internals/_cron_next
begin;
set local role pgflight_owner;
drop function pgflight._cron_next(integer[], integer[], integer[], integer[], integer[], integer[], boolean, boolean, text, timestamp with time zone);
commit;
