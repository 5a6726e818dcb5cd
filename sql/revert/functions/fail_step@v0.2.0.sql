-- Revert pgflight:functions/fail_step@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.fail_step(bigint, bigint, jsonb, jsonb);
commit;
