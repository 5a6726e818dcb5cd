-- Deploy pgflight:functions/stream_channels

begin;

set local role pgflight_owner;

-- Read: the streams of run p_run_id (what a reader follows: every channel it wrote), by channel.
-- Errors: 22023 a NULL run id; ZF003 unknown run (also one the login may not read, as stream_read).
CREATE OR REPLACE FUNCTION pgflight.stream_channels(p_run_id bigint) RETURNS TABLE(channel text, last_seq bigint, total_bytes bigint, updated_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform pgflight._require_readable_run(p_run_id, 'stream_channels');
  return query select s.channel, s.last_seq, s.total_bytes, s.updated_at
                 from pgflight.streams s where s.run_id = p_run_id order by s.channel;
end
$$;

COMMENT ON FUNCTION pgflight.stream_channels(p_run_id bigint) IS 'Read: the streams of a run: channel, last_seq, total_bytes, updated_at, by channel. Errors: 22023, ZF003 unknown run (also a run of a workspace the login may not read).';

REVOKE ALL ON FUNCTION pgflight.stream_channels(p_run_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.stream_channels(p_run_id bigint) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight.stream_channels(p_run_id bigint) TO pgflight_reader;

commit;
