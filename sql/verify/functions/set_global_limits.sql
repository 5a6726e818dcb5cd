-- Verify pgflight:functions/set_global_limits
select 'pgflight.set_global_limits(jsonb)'::regprocedure;
