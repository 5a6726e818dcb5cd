-- Revert pgflight:functions/cost_by_day
begin;
drop function pgflight.cost_by_day(integer);
commit;
