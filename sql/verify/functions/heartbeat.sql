-- Verify pgflight:functions/heartbeat
select 'pgflight.heartbeat(bigint, bigint[], bigint[])'::regprocedure;
