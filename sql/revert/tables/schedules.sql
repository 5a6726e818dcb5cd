-- Revert pgflight:tables/schedules
begin;
set local role pgflight_owner;
drop table pgflight.schedules;
commit;
