-- Revert pgflight:tables/workers
begin;
set local role pgflight_owner;
drop table pgflight.workers;
commit;
