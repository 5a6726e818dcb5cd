-- Revert pgflight:functions/start_step
begin;
set local role pgflight_owner;
drop function pgflight.start_step(bigint, bigint);
commit;
