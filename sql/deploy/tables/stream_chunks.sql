-- Deploy pgflight:tables/stream_chunks

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.stream_chunks (
    run_id bigint NOT NULL,
    channel text NOT NULL,
    seq bigint NOT NULL,
    attempt_id bigint NOT NULL,
    attempt_no integer NOT NULL,
    step_id bigint NOT NULL,
    chunk text NOT NULL,
    written_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT stream_seq_is_positive CHECK ((seq >= 1))
)
PARTITION BY RANGE (run_id);

COMMENT ON TABLE pgflight.stream_chunks IS 'One row per chunk of a stream: seq (1, 2, ... per run and channel, in write order), the attempt that wrote it (attempt_id, attempt_no: its number within its step), its step, the text, written_at (the time of its stream_write call: one per batch). Range-partitioned by run_id.';

CREATE TABLE pgflight.stream_chunks_default (
    run_id bigint NOT NULL,
    channel text NOT NULL,
    seq bigint NOT NULL,
    attempt_id bigint NOT NULL,
    attempt_no integer NOT NULL,
    step_id bigint NOT NULL,
    chunk text NOT NULL,
    written_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT stream_seq_is_positive CHECK ((seq >= 1))
);

CREATE TABLE pgflight.stream_chunks_from_0 (
    run_id bigint NOT NULL,
    channel text NOT NULL,
    seq bigint NOT NULL,
    attempt_id bigint NOT NULL,
    attempt_no integer NOT NULL,
    step_id bigint NOT NULL,
    chunk text NOT NULL,
    written_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT stream_seq_is_positive CHECK ((seq >= 1))
);

ALTER TABLE ONLY pgflight.stream_chunks ATTACH PARTITION pgflight.stream_chunks_default DEFAULT;

ALTER TABLE ONLY pgflight.stream_chunks ATTACH PARTITION pgflight.stream_chunks_from_0 FOR VALUES FROM ('0') TO ('100000');

ALTER TABLE ONLY pgflight.stream_chunks
    ADD CONSTRAINT stream_chunk_is_unique PRIMARY KEY (run_id, channel, seq);

ALTER TABLE ONLY pgflight.stream_chunks_default
    ADD CONSTRAINT stream_chunks_default_pkey PRIMARY KEY (run_id, channel, seq);

ALTER TABLE ONLY pgflight.stream_chunks_from_0
    ADD CONSTRAINT stream_chunks_from_0_pkey PRIMARY KEY (run_id, channel, seq);

ALTER INDEX pgflight.stream_chunk_is_unique ATTACH PARTITION pgflight.stream_chunks_default_pkey;

ALTER INDEX pgflight.stream_chunk_is_unique ATTACH PARTITION pgflight.stream_chunks_from_0_pkey;

commit;
