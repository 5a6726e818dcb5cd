-- Deploy pgflight:tables/settings

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.settings (
    singleton boolean DEFAULT true NOT NULL,
    max_input_bytes bigint DEFAULT 16777216 NOT NULL,
    default_lease_s double precision DEFAULT 30 NOT NULL,
    default_max_attempts integer DEFAULT 3 NOT NULL,
    reclaim_in_claim integer DEFAULT 16 NOT NULL,
    allow_fake_clock boolean DEFAULT false NOT NULL,
    purge_after_s double precision DEFAULT 604800 NOT NULL,
    max_result_bytes bigint DEFAULT 16777216 NOT NULL,
    max_error_bytes bigint DEFAULT 1048576 NOT NULL,
    max_receipt_bytes bigint DEFAULT 1048576 NOT NULL,
    max_approval_request_bytes bigint DEFAULT 1048576 NOT NULL,
    max_name_bytes integer DEFAULT 200 NOT NULL,
    max_children_per_call integer DEFAULT 100000 NOT NULL,
    max_children_per_parent integer DEFAULT 1000000 NOT NULL,
    max_batch_size integer DEFAULT 10000 NOT NULL,
    max_lease_s double precision DEFAULT 86400 NOT NULL,
    max_live_workers_per_login integer DEFAULT 1000 NOT NULL,
    max_stale_writes_per_attempt integer DEFAULT 100 NOT NULL,
    max_in_flight integer,
    max_runs_per_call integer DEFAULT 100000 NOT NULL,
    events_keep_s double precision DEFAULT 604800 NOT NULL,
    partitions_ahead_days integer DEFAULT 3 NOT NULL,
    agent_runs_per_partition bigint DEFAULT 100000 NOT NULL,
    max_lease_s_capped double precision DEFAULT 900 NOT NULL,
    max_schedules_per_workspace integer DEFAULT 100 NOT NULL,
    min_schedule_interval_s double precision DEFAULT 60 NOT NULL,
    max_trace_blocks_per_iteration integer DEFAULT 1000 NOT NULL,
    workers_keep_s double precision DEFAULT 604800 NOT NULL,
    max_json_depth integer DEFAULT 64 NOT NULL,
    event_retention_s double precision DEFAULT 604800 NOT NULL,
    max_event_payload_bytes bigint DEFAULT 1048576 NOT NULL,
    max_stream_chunk_bytes integer DEFAULT 65536 NOT NULL,
    max_stream_chunks_per_call integer DEFAULT 1000 NOT NULL,
    max_stream_bytes bigint DEFAULT 16777216 NOT NULL,
    runs_per_stream_partition bigint DEFAULT 100000 NOT NULL,
    CONSTRAINT agent_runs_per_partition_in_range CHECK (((agent_runs_per_partition >= 1000) AND (agent_runs_per_partition <= 1000000000))),
    CONSTRAINT caps_are_positive CHECK (((max_result_bytes > 0) AND (max_error_bytes > 0) AND (max_receipt_bytes > 0) AND (max_approval_request_bytes > 0) AND (max_name_bytes > 0) AND (max_children_per_call > 0) AND (max_children_per_parent > 0) AND (max_batch_size > 0) AND (max_lease_s > (0)::double precision) AND (max_live_workers_per_login > 0) AND (max_stale_writes_per_attempt > 0))),
    CONSTRAINT default_lease_is_positive CHECK ((default_lease_s > (0)::double precision)),
    CONSTRAINT default_max_attempts_is_positive CHECK ((default_max_attempts > 0)),
    CONSTRAINT event_retention_is_positive CHECK ((event_retention_s > (0)::double precision)),
    CONSTRAINT events_keep_is_positive CHECK ((events_keep_s > (0)::double precision)),
    CONSTRAINT max_event_payload_bytes_is_positive CHECK ((max_event_payload_bytes > 0)),
    CONSTRAINT max_in_flight_is_not_negative CHECK (((max_in_flight IS NULL) OR (max_in_flight >= 0))),
    CONSTRAINT max_input_bytes_is_positive CHECK ((max_input_bytes > 0)),
    CONSTRAINT max_json_depth_is_positive CHECK ((max_json_depth > 0)),
    CONSTRAINT max_runs_per_call_is_positive CHECK ((max_runs_per_call > 0)),
    CONSTRAINT max_trace_blocks_per_iteration_fits_its_band CHECK ((max_trace_blocks_per_iteration <= 1000)),
    CONSTRAINT partitions_ahead_in_range CHECK (((partitions_ahead_days >= 1) AND (partitions_ahead_days <= 90))),
    CONSTRAINT reclaim_in_claim_is_not_negative CHECK ((reclaim_in_claim >= 0)),
    CONSTRAINT runs_per_stream_partition_in_range CHECK (((runs_per_stream_partition >= 1000) AND (runs_per_stream_partition <= 1000000000))),
    CONSTRAINT settings_has_one_row CHECK (singleton),
    CONSTRAINT stream_caps_are_positive CHECK (((max_stream_chunk_bytes > 0) AND (max_stream_chunks_per_call > 0) AND (max_stream_bytes > 0))),
    CONSTRAINT tenant_caps_are_positive CHECK (((max_lease_s_capped > (0)::double precision) AND (max_schedules_per_workspace > 0) AND (min_schedule_interval_s > (0)::double precision) AND (max_trace_blocks_per_iteration > 0) AND (workers_keep_s > (0)::double precision)))
);

COMMENT ON TABLE pgflight.settings IS 'Engine-wide settings, exactly one row. max_input_bytes caps a step input (bytes of its JSON text); default_lease_s (seconds) and default_max_attempts apply when a run does not say; reclaim_in_claim bounds the expired leases each claim_batch call reclaims first; allow_fake_clock lets a session move pgflight._now() with SET pgflight.fake_now (tests only); purge_after_s is the retention of finished runs in seconds.';

COMMENT ON COLUMN pgflight.settings.max_result_bytes IS 'Cap (bytes of JSON text) of a result or an agent trace block.';

COMMENT ON COLUMN pgflight.settings.max_error_bytes IS 'Cap (bytes of JSON text) of fail_step''s error.';

COMMENT ON COLUMN pgflight.settings.max_receipt_bytes IS 'Cap (bytes of JSON text) of record_effect''s receipt.';

COMMENT ON COLUMN pgflight.settings.max_approval_request_bytes IS 'Cap (bytes of JSON text) of request_approval''s request.';

COMMENT ON COLUMN pgflight.settings.max_name_bytes IS 'Cap (bytes) of worker names, recipes, step, gate and effect keys, notes.';

COMMENT ON COLUMN pgflight.settings.max_children_per_call IS 'Cap of children in one spawn_children call.';

COMMENT ON COLUMN pgflight.settings.max_children_per_parent IS 'Cap of children of one parent over all calls.';

COMMENT ON COLUMN pgflight.settings.max_batch_size IS 'Cap of claim_batch''s batch size.';

COMMENT ON COLUMN pgflight.settings.max_lease_s IS 'Cap (seconds) of a lease.';

COMMENT ON COLUMN pgflight.settings.max_live_workers_per_login IS 'Cap of registered, not deregistered workers of one login.';

COMMENT ON COLUMN pgflight.settings.max_stale_writes_per_attempt IS 'Cap of stale_result_rejected events of one attempt.';

COMMENT ON COLUMN pgflight.settings.max_in_flight IS 'Global cap on leased attempts across all workspaces (null: none). While set, claims take turns.';

COMMENT ON COLUMN pgflight.settings.max_runs_per_call IS 'Cap of runs in one submit_runs call.';

COMMENT ON COLUMN pgflight.settings.events_keep_s IS 'Retention of the transition log (pgflight.events), seconds: a day partition is dropped once its end is older than this. Default 7 days. Independent of purge_after_s (finished runs).';

COMMENT ON COLUMN pgflight.settings.partitions_ahead_days IS 'How many days of events partitions maintain_partitions keeps created ahead of today (1..90, default 3).';

COMMENT ON COLUMN pgflight.settings.agent_runs_per_partition IS 'Width of a traces/costs partition in agent run ids (1,000..1,000,000,000, default 100,000): about a day of agent runs. A partition is dropped when every agent run in it is purged (purge_after_s), so a wider one keeps the traces of purged runs longer, a narrower one makes more partitions. Applies to partitions created from then on.';

COMMENT ON COLUMN pgflight.settings.max_lease_s_capped IS 'Ceiling (seconds) of a lease counted against an in-flight cap (settings.max_in_flight or a workspace''s): a claim''s requested lease is clamped to it, so one claim cannot hold a capped slot longer.';

COMMENT ON COLUMN pgflight.settings.max_schedules_per_workspace IS 'Cap of schedules of one workspace.';

COMMENT ON COLUMN pgflight.settings.min_schedule_interval_s IS 'Shortest gap (seconds) between two firings a schedule''s cron expression may allow.';

COMMENT ON COLUMN pgflight.settings.max_trace_blocks_per_iteration IS 'Cap of trace blocks of one agent run iteration (record_trace, record_model_call); 1 .. 1000, the seq band of a model response (0 .. 999; tool results from 1000).';

COMMENT ON COLUMN pgflight.settings.workers_keep_s IS 'How long (seconds) a stopped worker''s row is kept before the retention sweep (maintain_partitions) deletes it.';

COMMENT ON COLUMN pgflight.settings.max_json_depth IS 'Cap of how deep arrays and objects nest in a JSON value the API accepts (a scalar is 0, [1] is 1, {"a": [1]} is 2).';

COMMENT ON COLUMN pgflight.settings.event_retention_s IS 'Seconds an emitted event is kept (default 7 days): a wait for its name and key that starts within it receives it at once; expire_waits deletes it afterwards. Also how long its event id stays idempotent.';

COMMENT ON COLUMN pgflight.settings.max_event_payload_bytes IS 'Cap (bytes of JSON text) of emit_event''s payload and of wait_event''s default payload.';

COMMENT ON COLUMN pgflight.settings.max_stream_chunk_bytes IS 'Cap (bytes, UTF-8) of one chunk of stream_write (default 65,536).';

COMMENT ON COLUMN pgflight.settings.max_stream_chunks_per_call IS 'Cap of the chunks one stream_write call carries (default 1,000).';

COMMENT ON COLUMN pgflight.settings.max_stream_bytes IS 'Cap (bytes) of everything written to one stream (a run''s channel), all attempts together (default 16 MiB).';

COMMENT ON COLUMN pgflight.settings.runs_per_stream_partition IS 'Width of a streams/stream_chunks partition in run ids (1,000..1,000,000,000, default 100,000). A partition is dropped when every run in it is purged (purge_after_s). Applies to partitions created from then on.';

ALTER TABLE ONLY pgflight.settings
    ADD CONSTRAINT settings_pkey PRIMARY KEY (singleton);

INSERT INTO pgflight.settings (singleton, max_input_bytes, default_lease_s, default_max_attempts, reclaim_in_claim, allow_fake_clock, purge_after_s, max_result_bytes, max_error_bytes, max_receipt_bytes, max_approval_request_bytes, max_name_bytes, max_children_per_call, max_children_per_parent, max_batch_size, max_lease_s, max_live_workers_per_login, max_stale_writes_per_attempt, max_in_flight, max_runs_per_call, events_keep_s, partitions_ahead_days, agent_runs_per_partition, max_lease_s_capped, max_schedules_per_workspace, min_schedule_interval_s, max_trace_blocks_per_iteration, workers_keep_s, max_json_depth, event_retention_s, max_event_payload_bytes, max_stream_chunk_bytes, max_stream_chunks_per_call, max_stream_bytes, runs_per_stream_partition) VALUES (true, 16777216, 30, 3, 16, false, 604800, 16777216, 1048576, 1048576, 1048576, 200, 100000, 1000000, 10000, 86400, 1000, 100, NULL, 100000, 604800, 3, 100000, 900, 100, 60, 1000, 604800, 64, 604800, 1048576, 65536, 1000, 16777216, 100000);

commit;
