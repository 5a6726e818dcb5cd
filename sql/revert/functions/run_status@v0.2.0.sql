-- Revert pgflight:functions/run_status@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.run_status(bigint);
commit;
