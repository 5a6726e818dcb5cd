-- Verify pgflight:functions/run_audit
select 'pgflight.run_audit(bigint)'::regprocedure;
