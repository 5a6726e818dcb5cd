-- Revert pgflight:functions/record_stale_write@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.record_stale_write(bigint, bigint, text);
commit;
