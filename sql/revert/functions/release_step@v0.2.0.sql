-- Revert pgflight:functions/release_step@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.release_step(bigint, bigint, text);
commit;
