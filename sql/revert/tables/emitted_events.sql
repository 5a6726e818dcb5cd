-- Revert pgflight:tables/emitted_events
begin;
set local role pgflight_owner;
drop table pgflight.emitted_events;
commit;
