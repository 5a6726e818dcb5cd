-- Revert pgflight:cron/install_schedules@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.install_schedules(integer);
commit;
