-- Revert pgflight:functions/stream_read
begin;
set local role pgflight_owner;
drop function pgflight.stream_channels(bigint);
drop function pgflight.stream_read(bigint, text, bigint, integer, double precision);
drop function pgflight._require_readable_run(bigint, text);
commit;
