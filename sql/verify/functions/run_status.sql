-- Verify pgflight:functions/run_status
select 'pgflight.run_status(bigint)'::regprocedure;
