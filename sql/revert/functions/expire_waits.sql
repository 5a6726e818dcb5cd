-- Revert pgflight:functions/expire_waits
begin;
set local role pgflight_owner;
drop function pgflight.expire_waits(integer);
commit;
