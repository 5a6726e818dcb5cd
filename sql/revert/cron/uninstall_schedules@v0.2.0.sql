-- Revert pgflight:cron/uninstall_schedules@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.uninstall_schedules();
commit;
