-- Revert pgflight:tables/costs
begin;
set local role pgflight_owner;
drop table pgflight.costs;
commit;
