-- Revert pgflight:functions/cancel_step
begin;
set local role pgflight_owner;
drop function pgflight.cancel_step(bigint, text, text);
commit;
