-- Revert pgflight:functions/record_stale_write
begin;
drop function pgflight.record_stale_write(bigint, bigint, text);
drop function pgflight._record_stale(bigint, bigint, text);
commit;
