-- Revert pgflight:functions/wait_timer
begin;
set local role pgflight_owner;
drop function pgflight.wait_timer(bigint, bigint, text, double precision, jsonb);
commit;
