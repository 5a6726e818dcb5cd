-- Revert pgflight:functions/start_step
begin;
drop function pgflight.start_step(bigint, bigint);
commit;
