-- Revert pgflight:functions/stream_write
begin;
set local role pgflight_owner;
drop function pgflight.stream_write(bigint, bigint, text, text[], jsonb);
commit;
