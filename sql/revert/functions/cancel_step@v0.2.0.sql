-- Revert pgflight:functions/cancel_step@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.cancel_step(bigint, text, text);
commit;
