-- Revert pgflight:functions/metrics_snapshot
begin;
set local role pgflight_owner;
drop function pgflight.metrics_snapshot(bigint, integer);
commit;
