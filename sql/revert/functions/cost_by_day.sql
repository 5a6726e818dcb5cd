-- Revert pgflight:functions/cost_by_day
begin;
set local role pgflight_owner;
drop function pgflight.cost_by_day(integer);
commit;
