-- Deploy pgflight:functions/stream_read
begin;
set local role pgflight_owner;

-- The check both stream readers start with: 22023 for a NULL run id; ZF003 "unknown run" for a run
-- that does not exist or that the login may not read (one answer for both: another tenant's run
-- reads as one never issued).
create or replace function pgflight._require_readable_run(p_run_id bigint, p_operation text)
returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_ws bigint;
begin
  if p_run_id is null then
    raise exception using errcode = '22023', message = format('%s refused: the run id is null', p_operation),
      hint = 'Pass the run_id that submit_run returned.';
  end if;
  select r.workspace_id into v_ws from pgflight.runs r where r.id = p_run_id;
  if not found or not pgflight._may('reader', v_ws) then
    raise exception using errcode = 'ZF003', message = format('unknown run %s', p_run_id),
      hint = 'Use a run_id of a workspace the login may read.';
  end if;
end
$$;
comment on function pgflight._require_readable_run(bigint, text) is
  'Internal: 22023 for a NULL run id, ZF003 unknown run for one that does not exist or the login may not read.';

-- Read: the chunks of stream p_channel of run p_run_id after sequence number p_after_seq, in
-- order, at most p_limit (1..10,000). A reader keeps the last seq it saw and passes it back: that
-- is the whole resume protocol, across reconnects and worker crashes (docs/streams.md).
-- Waiting: when no chunk is past p_after_seq, the call waits up to p_wait_s seconds (0..60) for
-- one, polling every 20 ms (an index probe each; no LISTEN: a notification reaches a session only
-- between transactions, never inside a function), and answers as soon as a chunk is committed, or
-- no row at the end of the wait. Each poll is its own statement with its own snapshot in READ
-- COMMITTED (the default); in REPEATABLE READ or SERIALIZABLE the wait sees nothing new, so call
-- it there with p_wait_s = 0 and call again.
-- Attempts: each chunk carries the attempt that wrote it (attempt_id, attempt_no of its step). A
-- reclaimed attempt's chunks stay as they were written (up to its last batch that committed);
-- the next attempt's chunks follow them with higher seq and a higher attempt_no. A reader that
-- shows one attempt's output drops what it holds when attempt_no (or attempt_id) changes.
-- Tenancy: a run the login may not read (another workspace) is answered as an unknown one: ZF003,
-- the same message as a run that does not exist. A channel never written is no row.
-- Errors: 22023 a NULL run id, NULL or blank channel, a negative or NULL after_seq, a limit outside
-- 1..10,000, a wait outside 0..60 s; ZF003 unknown run.
create or replace function pgflight.stream_read(p_run_id bigint, p_channel text, p_after_seq bigint default 0,
                                                p_limit integer default 1000, p_wait_s double precision default 0)
returns table (seq bigint, attempt_no integer, attempt_id bigint, step_id bigint, chunk text, written_at timestamptz)
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_until timestamptz;
begin
  perform pgflight._require_readable_run(p_run_id, 'stream_read');
  if p_channel is null or btrim(p_channel) = '' then
    raise exception using errcode = '22023', message = 'stream_read refused: the channel is required',
      hint = 'Name the stream the run writes, e.g. ''tokens''.';
  end if;
  perform pgflight._check_arg('after_seq', p_after_seq, 0, 9.2e18);
  perform pgflight._require_limit('limit', p_limit, 10000);
  perform pgflight._check_arg('wait_s', p_wait_s, 0, 60);
  v_until := clock_timestamp() + make_interval(secs => p_wait_s);
  loop
    return query
      select c.seq, c.attempt_no, c.attempt_id, c.step_id, c.chunk, c.written_at
        from pgflight.stream_chunks c
       where c.run_id = p_run_id and c.channel = p_channel and c.seq > p_after_seq
       order by c.seq
       limit p_limit;
    exit when found or clock_timestamp() >= v_until;
    perform pg_sleep(least(0.02, greatest(extract(epoch from v_until - clock_timestamp()), 0)));
  end loop;
end
$$;
comment on function pgflight.stream_read(bigint, text, bigint, integer, double precision) is
  'Read: chunks of a run''s stream with seq > p_after_seq in order (at most p_limit, 1..10,000): seq, attempt_no, '
  'attempt_id, step_id, chunk (text), written_at; waits up to p_wait_s (0..60 s, polling every 20 ms) for the '
  'first one. Errors: 22023 bad argument, ZF003 unknown run (also a run of a workspace the login may not read).';
grant execute on function pgflight.stream_read(bigint, text, bigint, integer, double precision)
  to pgflight_operator, pgflight_reader;

-- Read: the streams of run p_run_id (what a reader follows: every channel it wrote), by channel.
-- Errors: 22023 a NULL run id; ZF003 unknown run (also one the login may not read, as stream_read).
create or replace function pgflight.stream_channels(p_run_id bigint)
returns table (channel text, last_seq bigint, total_bytes bigint, updated_at timestamptz)
language plpgsql stable security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  perform pgflight._require_readable_run(p_run_id, 'stream_channels');
  return query select s.channel, s.last_seq, s.total_bytes, s.updated_at
                 from pgflight.streams s where s.run_id = p_run_id order by s.channel;
end
$$;
comment on function pgflight.stream_channels(bigint) is
  'Read: the streams of a run: channel, last_seq, total_bytes, updated_at, by channel. Errors: 22023, ZF003 '
  'unknown run (also a run of a workspace the login may not read).';
grant execute on function pgflight.stream_channels(bigint) to pgflight_operator, pgflight_reader;

commit;
