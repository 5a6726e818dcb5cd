-- Revert pgflight:functions/fire_schedules@v0.9.0
begin;
set local role pgflight_owner;
drop function pgflight.fire_schedules(integer);
commit;
