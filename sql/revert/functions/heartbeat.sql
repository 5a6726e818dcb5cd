-- Revert pgflight:functions/heartbeat
begin;
set local role pgflight_owner;
drop function pgflight.heartbeat(bigint, bigint[], bigint[]);
commit;
