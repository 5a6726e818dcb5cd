-- Revert pgflight:functions/run_status
begin;
drop function pgflight.run_status(bigint);
commit;
