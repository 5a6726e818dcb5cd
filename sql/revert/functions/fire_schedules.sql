-- Revert pgflight:functions/fire_schedules
begin;
set local role pgflight_owner;
drop function pgflight.fire_schedules(integer);
commit;
