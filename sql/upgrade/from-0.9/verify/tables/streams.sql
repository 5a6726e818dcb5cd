-- Verify pgflight:tables/streams
select run_id, channel, workspace_id, last_seq, total_bytes, created_at, updated_at from pgflight.streams where false;
select run_id, channel, seq, attempt_id, attempt_no, step_id, chunk, written_at from pgflight.stream_chunks where false;
select max_stream_chunk_bytes, max_stream_chunks_per_call, max_stream_bytes, runs_per_stream_partition
  from pgflight.settings where false;
