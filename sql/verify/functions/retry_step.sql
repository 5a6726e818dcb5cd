-- Verify pgflight:functions/retry_step
select 'pgflight._reopen_step(bigint, text, text, text)'::regprocedure;
select 'pgflight.retry_step(bigint, text, text)'::regprocedure;
select 'pgflight.replay_from(bigint, text, text)'::regprocedure;
