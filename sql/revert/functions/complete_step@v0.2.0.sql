-- Revert pgflight:functions/complete_step@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.complete_step(bigint, bigint, jsonb);
commit;
