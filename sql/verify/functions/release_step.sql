-- Verify pgflight:functions/release_step
select 'pgflight.release_step(bigint, bigint, text)'::regprocedure;
