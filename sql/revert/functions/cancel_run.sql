-- Revert pgflight:functions/cancel_run
begin;
drop function pgflight.cancel_step(bigint, text, text);
drop function pgflight.cancel_run(bigint, text, text);
commit;
