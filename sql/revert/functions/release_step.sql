-- Revert pgflight:functions/release_step
begin;
drop function pgflight.release_step(bigint, bigint, text);
commit;
