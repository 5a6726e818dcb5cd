-- Verify pgflight:functions/cancel_run
select 'pgflight.cancel_run(bigint, text, text)'::regprocedure;
select 'pgflight.cancel_step(bigint, text, text)'::regprocedure;
