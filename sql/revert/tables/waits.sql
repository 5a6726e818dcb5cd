-- Revert pgflight:tables/waits
begin;
set local role pgflight_owner;
drop table pgflight.waits;
commit;
