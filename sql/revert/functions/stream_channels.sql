-- Revert pgflight:functions/stream_channels
begin;
set local role pgflight_owner;
drop function pgflight.stream_channels(bigint);
commit;
