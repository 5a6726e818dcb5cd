-- Revert pgflight:functions/cancel_run@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.cancel_run(bigint, text, text);
commit;
