-- Revert pgflight:functions/retry_step@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.retry_step(bigint, text, text);
commit;
