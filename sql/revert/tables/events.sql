-- Revert pgflight:tables/events
begin;
set local role pgflight_owner;
drop table pgflight.events;
commit;
