-- Revert pgflight:functions/release_step
begin;
set local role pgflight_owner;
drop function pgflight.release_step(bigint, bigint, text, jsonb);
commit;
