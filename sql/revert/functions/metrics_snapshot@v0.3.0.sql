-- Revert pgflight:functions/metrics_snapshot@v0.3.0
begin;
set local role pgflight_owner;
drop function pgflight.metrics_snapshot(bigint, integer);
commit;
