-- Revert pgflight:functions/heartbeat
begin;
drop function pgflight.heartbeat(bigint, bigint[], bigint[]);
commit;
