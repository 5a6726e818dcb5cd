-- Verify pgflight:functions/fire_schedules
select 'pgflight.fire_schedules(integer)'::regprocedure;
