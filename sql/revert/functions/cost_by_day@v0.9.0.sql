-- Revert pgflight:functions/cost_by_day@v0.9.0
begin;
set local role pgflight_owner;
drop function pgflight.cost_by_day(integer);
commit;
