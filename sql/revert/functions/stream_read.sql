-- Revert pgflight:functions/stream_read
begin;
set local role pgflight_owner;
drop function pgflight.stream_read(bigint, text, bigint, integer, double precision);
commit;
