-- Deploy pgflight:functions/stream_write

begin;

set local role pgflight_owner;

-- A running step appends chunks to a stream of its run: channel p_channel, the texts p_chunks in
-- order (docs/streams.md). Fenced like every worker write (internals/_fencing): the attempt must be
-- held with this token by a worker of the calling login. The chunks get the stream's next numbers
-- (seq), each row naming this attempt and its number (attempt_no), in one statement per table; the
-- stream row (streams) is upserted first and stays locked to the commit, so the writers of one
-- channel (several steps of a run) are serialized and their numbers never interleave or repeat.
-- A batch: the Python worker sends every chunk of the last 50 ms (or 16 KiB) in one call, so a
-- token stream costs one commit per batch, not per token. An empty array writes nothing and
-- answers the stream's current last_seq. It sends no NOTIFY: LISTEN needs no privilege, so a
-- payload naming the run would tell any login which runs of every workspace are streaming
-- (readers poll: stream_read's own wait).
-- Errors: 22023 a NULL attempt id or token (the fence), a NULL, blank or multi-dimensional
-- argument, a NULL chunk, an unknown option; ZF005 a channel over settings.max_name_bytes, more
-- chunks than settings.max_stream_chunks_per_call, a chunk over settings.max_stream_chunk_bytes,
-- a stream whose total would pass settings.max_stream_bytes (nothing is written); ZF001 lease
-- lost, ZF002 cancelled, ZF003 unknown attempt (or outside the login's worker lanes), ZF012
-- another login's attempt. Locks: the attempt, then the stream row.
CREATE OR REPLACE FUNCTION pgflight.stream_write(p_attempt_id bigint, p_token bigint, p_channel text, p_chunks text[], p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(first_seq bigint, last_seq bigint, total_bytes bigint)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_caps record;
  v_att pgflight.step_attempts;
  v_n integer := coalesce(cardinality(p_chunks), 0);
  v_max integer;
  v_bytes bigint;
  v_head record;
  v_now timestamptz := pgflight._now();  -- one time per call: a batch's chunks share it
begin
  perform pgflight._check_options('stream_write', p_options);
  if p_channel is null or btrim(p_channel) = '' then
    raise exception using errcode = '22023', message = 'stream_write refused: the channel is required',
      hint = 'Name the stream within the run, e.g. ''tokens'' or ''progress''.';
  end if;
  if p_chunks is null or array_ndims(p_chunks) > 1 or array_position(p_chunks, null) is not null then
    raise exception using errcode = '22023',
      message = 'stream_write refused: the chunks must be a one-dimensional array of texts without NULLs',
      detail = case when p_chunks is null then 'got NULL' when array_ndims(p_chunks) > 1 then
                 format('got %s dimensions', array_ndims(p_chunks)) else
                 format('chunk %s is NULL', array_position(p_chunks, null)) end,
      hint = 'Pass text[]: ''{}'' writes nothing.';
  end if;
  select s.max_name_bytes, s.max_stream_chunks_per_call, s.max_stream_chunk_bytes, s.max_stream_bytes
    into v_caps from pgflight.settings s;
  perform pgflight._require_cap('max_name_bytes', v_caps.max_name_bytes, octet_length(p_channel),
                                'stream channel (bytes)');
  perform pgflight._require_cap('max_stream_chunks_per_call', v_caps.max_stream_chunks_per_call, v_n,
                                'chunks of one stream_write call');
  select max(octet_length(c)), coalesce(sum(octet_length(c)), 0) into v_max, v_bytes from unnest(p_chunks) c;
  perform pgflight._require_cap('max_stream_chunk_bytes', v_caps.max_stream_chunk_bytes, coalesce(v_max, 0),
                                'stream chunk (bytes)');
  v_att := pgflight._lock_held(p_attempt_id, p_token, 'stream_write');

  if v_n = 0 then
    return query select null::bigint, coalesce(max(s.last_seq), 0), coalesce(max(s.total_bytes), 0)
                   from pgflight.streams s where s.run_id = v_att.run_id and s.channel = p_channel;
    return;
  end if;
  insert into pgflight.streams as s (run_id, channel, workspace_id, last_seq, total_bytes)
  values (v_att.run_id, p_channel, v_att.workspace_id, v_n, v_bytes)
  on conflict (run_id, channel) do update
     set last_seq = s.last_seq + v_n, total_bytes = s.total_bytes + v_bytes, updated_at = v_now
  returning s.last_seq, s.total_bytes into v_head;
  perform pgflight._require_cap('max_stream_bytes', v_caps.max_stream_bytes, v_head.total_bytes,
                                format('stream %s of run %s (bytes, with this call)', left(p_channel, 100), v_att.run_id));
  insert into pgflight.stream_chunks (run_id, channel, seq, attempt_id, attempt_no, step_id, chunk, written_at)
  select v_att.run_id, p_channel, v_head.last_seq - v_n + c.ord, v_att.id, v_att.attempt_no, v_att.step_id, c.chunk,
         v_now
    from unnest(p_chunks) with ordinality c(chunk, ord);
  return query select v_head.last_seq - v_n + 1, v_head.last_seq, v_head.total_bytes;
end
$$;

COMMENT ON FUNCTION pgflight.stream_write(p_attempt_id bigint, p_token bigint, p_channel text, p_chunks text[], p_options jsonb) IS 'Worker: append chunks (text[], in order) to stream p_channel of the attempt''s run; each gets the next seq and the attempt''s id and number. Returns first_seq, last_seq (null, last when none was sent), total_bytes of the stream. Caps: settings.max_stream_chunks_per_call, max_stream_chunk_bytes, max_stream_bytes, max_name_bytes (the channel). Errors: 22023, ZF001, ZF002, ZF003, ZF005, ZF012.';

REVOKE ALL ON FUNCTION pgflight.stream_write(p_attempt_id bigint, p_token bigint, p_channel text, p_chunks text[], p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.stream_write(p_attempt_id bigint, p_token bigint, p_channel text, p_chunks text[], p_options jsonb) TO pgflight_worker;

commit;
