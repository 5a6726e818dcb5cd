-- Revert pgflight:functions/heartbeat@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.heartbeat(bigint, bigint[], bigint[]);
commit;
