-- Verify pgflight:functions/fail_step
select 'pgflight.fail_step(bigint, bigint, jsonb, jsonb)'::regprocedure;
