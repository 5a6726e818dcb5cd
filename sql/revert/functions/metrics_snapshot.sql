-- Revert pgflight:functions/metrics_snapshot
begin;
drop function pgflight.metrics_snapshot(bigint, integer);
commit;
