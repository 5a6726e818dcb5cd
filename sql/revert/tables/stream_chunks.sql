-- Revert pgflight:tables/stream_chunks
begin;
set local role pgflight_owner;
drop table pgflight.stream_chunks;
commit;
