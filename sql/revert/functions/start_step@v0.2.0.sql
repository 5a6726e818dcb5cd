-- Revert pgflight:functions/start_step@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.start_step(bigint, bigint);
commit;
