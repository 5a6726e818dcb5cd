-- Revert pgflight:tables/streams
begin;
set local role pgflight_owner;
drop table pgflight.streams;
commit;
