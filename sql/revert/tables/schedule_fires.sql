-- Revert pgflight:tables/schedule_fires
begin;
set local role pgflight_owner;
drop table pgflight.schedule_fires;
commit;
