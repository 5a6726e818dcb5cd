-- Deploy pgflight:tables/streams

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.streams (
    run_id bigint NOT NULL,
    channel text NOT NULL,
    workspace_id bigint NOT NULL,
    last_seq bigint DEFAULT 0 NOT NULL,
    total_bytes bigint DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    updated_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT stream_counts_are_not_negative CHECK (((last_seq >= 0) AND (total_bytes >= 0)))
)
PARTITION BY RANGE (run_id);

COMMENT ON TABLE pgflight.streams IS 'One row per stream (a run''s named channel): last_seq (the last chunk''s number, 0 before any), total_bytes (UTF-8 bytes of every chunk written, capped by settings.max_stream_bytes). Range-partitioned by run_id.';

CREATE TABLE pgflight.streams_default (
    run_id bigint NOT NULL,
    channel text NOT NULL,
    workspace_id bigint NOT NULL,
    last_seq bigint DEFAULT 0 NOT NULL,
    total_bytes bigint DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    updated_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT stream_counts_are_not_negative CHECK (((last_seq >= 0) AND (total_bytes >= 0)))
);

CREATE TABLE pgflight.streams_from_0 (
    run_id bigint NOT NULL,
    channel text NOT NULL,
    workspace_id bigint NOT NULL,
    last_seq bigint DEFAULT 0 NOT NULL,
    total_bytes bigint DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    updated_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT stream_counts_are_not_negative CHECK (((last_seq >= 0) AND (total_bytes >= 0)))
);

ALTER TABLE ONLY pgflight.streams ATTACH PARTITION pgflight.streams_default DEFAULT;

ALTER TABLE ONLY pgflight.streams ATTACH PARTITION pgflight.streams_from_0 FOR VALUES FROM ('0') TO ('100000');

ALTER TABLE ONLY pgflight.streams
    ADD CONSTRAINT stream_is_unique PRIMARY KEY (run_id, channel);

ALTER TABLE ONLY pgflight.streams_default
    ADD CONSTRAINT streams_default_pkey PRIMARY KEY (run_id, channel);

ALTER TABLE ONLY pgflight.streams_from_0
    ADD CONSTRAINT streams_from_0_pkey PRIMARY KEY (run_id, channel);

ALTER INDEX pgflight.stream_is_unique ATTACH PARTITION pgflight.streams_default_pkey;

ALTER INDEX pgflight.stream_is_unique ATTACH PARTITION pgflight.streams_from_0_pkey;

commit;
