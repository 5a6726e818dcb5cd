-- Revert pgflight:functions/fail_step
begin;
drop function pgflight.fail_step(bigint, bigint, jsonb, jsonb);
commit;
