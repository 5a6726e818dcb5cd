-- Revert pgflight:functions/complete_step
begin;
set local role pgflight_owner;
drop function pgflight.complete_step(bigint, bigint, jsonb);
commit;
