-- Revert pgflight:functions/fail_step
begin;
set local role pgflight_owner;
drop function pgflight.fail_step(bigint, bigint, jsonb, jsonb);
commit;
