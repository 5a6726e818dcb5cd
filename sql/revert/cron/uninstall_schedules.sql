-- Revert pgflight:cron/uninstall_schedules
begin;
set local role pgflight_owner;
drop function pgflight.uninstall_schedules();
commit;
