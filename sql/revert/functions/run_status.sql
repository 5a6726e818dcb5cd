-- Revert pgflight:functions/run_status
begin;
set local role pgflight_owner;
drop function pgflight.run_status(bigint);
commit;
