-- Revert pgflight:functions/cancel_run
begin;
set local role pgflight_owner;
drop function pgflight.cancel_run(bigint, text, text);
commit;
