-- Revert pgflight:tables/event_channels
begin;
set local role pgflight_owner;
drop table pgflight.event_channels;
commit;
