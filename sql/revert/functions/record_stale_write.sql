-- Revert pgflight:functions/record_stale_write
begin;
set local role pgflight_owner;
drop function pgflight.record_stale_write(bigint, bigint, text);
commit;
