-- Verify pgflight:functions/metrics_snapshot
select 'pgflight.metrics_snapshot(bigint, integer)'::regprocedure;
