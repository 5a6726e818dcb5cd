-- Revert pgflight:functions/retry_step
begin;
drop function pgflight.replay_from(bigint, text, text);
drop function pgflight.retry_step(bigint, text, text);
drop function pgflight._reopen_step(bigint, text, text, text);
commit;
