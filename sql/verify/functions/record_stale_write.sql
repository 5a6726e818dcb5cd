-- Verify pgflight:functions/record_stale_write
select 'pgflight._record_stale(bigint, bigint, text)'::regprocedure;
select 'pgflight.record_stale_write(bigint, bigint, text)'::regprocedure;
