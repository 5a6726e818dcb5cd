-- Revert pgflight:tables/streams
begin;
set local role pgflight_owner;

drop table pgflight.stream_chunks;  -- with its partitions
drop table pgflight.streams;
alter table pgflight.settings
  drop constraint stream_caps_are_positive, drop constraint runs_per_stream_partition_in_range,
  drop column max_stream_chunk_bytes, drop column max_stream_chunks_per_call, drop column max_stream_bytes,
  drop column runs_per_stream_partition;

commit;
