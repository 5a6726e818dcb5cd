-- Revert pgflight:cron/install_schedules
begin;
set local role pgflight_owner;
drop function pgflight.install_schedules(integer);
commit;
