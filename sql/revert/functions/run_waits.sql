-- Revert pgflight:functions/run_waits
begin;
set local role pgflight_owner;
drop function pgflight.run_waits(bigint);
commit;
