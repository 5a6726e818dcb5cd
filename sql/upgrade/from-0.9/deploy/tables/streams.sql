-- Deploy pgflight:tables/streams
-- requires: tables/runs tables/settings_caps internals/_clock
-- Streams (docs/streams.md): what a running step writes for readers while it runs (a model's
-- tokens, progress lines), as rows. A stream is one named channel of one run; its chunks are
-- numbered 1, 2, 3 ... in the order they were written, across every step and attempt of the run
-- that writes to it, and each chunk names the attempt (and its number) that wrote it.
--   streams        one row per (run, channel): the next sequence number and the bytes written so
--                  far; stream_write locks it, so the writers of one channel are serialized and
--                  the per-stream cap is one read;
--   stream_chunks  one row per chunk (text), keyed (run_id, channel, seq): stream_read pages it
--                  by that key.
-- Both are range-partitioned by run_id, as traces and costs are by agent_run_id (tables/
-- firehose_by_agent_run): partitions streams_from_<lo> / stream_chunks_from_<lo> hold runs
-- [lo, lo + settings.runs_per_stream_partition), created ahead by maintain_partitions and dropped
-- (both at once) when every run id of the range has been drawn and no run of it is left
-- (purge_finished purged them all); ids past the last partition land in the *_default partitions,
-- whose rows of purged runs maintain_partitions deletes a bounded number at a time. No foreign
-- key to runs (purging a run does not delete its chunks row by row).
begin;
set local role pgflight_owner;

alter table pgflight.settings
  add column max_stream_chunk_bytes      integer not null default 65536,
  add column max_stream_chunks_per_call  integer not null default 1000,
  add column max_stream_bytes            bigint  not null default 16777216,
  add column runs_per_stream_partition   bigint  not null default 100000,
  add constraint stream_caps_are_positive
    check (max_stream_chunk_bytes > 0 and max_stream_chunks_per_call > 0 and max_stream_bytes > 0),
  add constraint runs_per_stream_partition_in_range check (runs_per_stream_partition between 1000 and 1000000000);
comment on column pgflight.settings.max_stream_chunk_bytes is
  'Cap (bytes, UTF-8) of one chunk of stream_write (default 65,536).';
comment on column pgflight.settings.max_stream_chunks_per_call is
  'Cap of the chunks one stream_write call carries (default 1,000).';
comment on column pgflight.settings.max_stream_bytes is
  'Cap (bytes) of everything written to one stream (a run''s channel), all attempts together (default 16 MiB).';
comment on column pgflight.settings.runs_per_stream_partition is
  'Width of a streams/stream_chunks partition in run ids (1,000..1,000,000,000, default 100,000). A partition '
  'is dropped when every run in it is purged (purge_after_s). Applies to partitions created from then on.';

create table pgflight.streams (
  run_id        bigint not null,
  channel       text not null,
  workspace_id  bigint not null,
  last_seq      bigint not null default 0,
  total_bytes   bigint not null default 0,
  created_at    timestamptz not null default pgflight._now(),
  updated_at    timestamptz not null default pgflight._now(),
  constraint stream_is_unique primary key (run_id, channel),
  constraint stream_counts_are_not_negative check (last_seq >= 0 and total_bytes >= 0)
) partition by range (run_id);
comment on table pgflight.streams is
  'One row per stream (a run''s named channel): last_seq (the last chunk''s number, 0 before any), total_bytes '
  '(UTF-8 bytes of every chunk written, capped by settings.max_stream_bytes). Range-partitioned by run_id.';

create table pgflight.stream_chunks (
  run_id        bigint not null,
  channel       text not null,
  seq           bigint not null,
  attempt_id    bigint not null,
  attempt_no    integer not null,
  step_id       bigint not null,
  chunk         text not null,
  written_at    timestamptz not null default pgflight._now(),
  constraint stream_chunk_is_unique primary key (run_id, channel, seq),
  constraint stream_seq_is_positive check (seq >= 1)
) partition by range (run_id);
comment on table pgflight.stream_chunks is
  'One row per chunk of a stream: seq (1, 2, ... per run and channel, in write order), the attempt that wrote '
  'it (attempt_id, attempt_no: its number within its step), its step, the text, written_at (the time of its '
  'stream_write call: one per batch). Range-partitioned by run_id.';

do $$
declare
  v_width bigint := 100000;
  v_next bigint;
  v_lo bigint;
  v_table text;
begin
  select case when s.is_called then s.last_value + 1 else s.last_value end into v_next from pgflight.runs_id_seq s;
  v_lo := (v_next / v_width) * v_width;
  foreach v_table in array array['streams', 'stream_chunks'] loop
    execute format('create table pgflight.%I partition of pgflight.%I default', v_table || '_default', v_table);
    if v_lo > 0 then
      execute format('create table pgflight.%I partition of pgflight.%I for values from (0) to (%s)',
                     v_table || '_from_0', v_table, v_lo);
    end if;
    execute format('create table pgflight.%I partition of pgflight.%I for values from (%s) to (%s)',
                   v_table || '_from_' || v_lo, v_table, v_lo, v_lo + v_width);
  end loop;
end
$$;

commit;
