-- Revert pgflight:tables/schedules
begin;
set local role pgflight_owner;
drop table pgflight.schedule_fires;
drop table pgflight.schedules;
commit;
