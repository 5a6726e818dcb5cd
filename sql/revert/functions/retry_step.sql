-- Revert pgflight:functions/retry_step
begin;
set local role pgflight_owner;
drop function pgflight.retry_step(bigint, text, text);
commit;
