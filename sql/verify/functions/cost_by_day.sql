-- Verify pgflight:functions/cost_by_day
select 'pgflight.cost_by_day(integer)'::regprocedure;
