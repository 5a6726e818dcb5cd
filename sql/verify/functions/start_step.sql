-- Verify pgflight:functions/start_step
select 'pgflight.start_step(bigint, bigint)'::regprocedure;
