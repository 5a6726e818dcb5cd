-- Revert pgflight:tables/costs
begin;
drop table pgflight.costs;
commit;
