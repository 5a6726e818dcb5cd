-- Deploy pgflight:tables/traces

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.traces (
    id bigint NOT NULL,
    agent_run_id bigint NOT NULL,
    iteration integer NOT NULL,
    seq integer NOT NULL,
    role text NOT NULL,
    block_type text NOT NULL,
    tool_use_id text,
    tool_name text,
    content jsonb,
    status text DEFAULT 'completed'::text NOT NULL,
    tokens integer,
    attempt_id bigint,
    created_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    updated_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT block_type_is_a_name CHECK ((block_type ~ '^[a-z][a-z0-9_]{0,63}$'::text)),
    CONSTRAINT iteration_is_not_negative CHECK ((LEAST(iteration, seq) >= 0)),
    CONSTRAINT role_is_known CHECK ((role = ANY ('{user,assistant,system}'::text[]))),
    CONSTRAINT status_is_known CHECK ((status = ANY ('{completed,in_flight,interrupted}'::text[]))),
    CONSTRAINT tool_blocks_name_their_call CHECK (((block_type <> ALL ('{tool_use,tool_result}'::text[])) OR (tool_use_id IS NOT NULL)))
)
PARTITION BY RANGE (agent_run_id);

COMMENT ON TABLE pgflight.traces IS 'Flight recorder, one row per block: role user|assistant|system, block_type thinking|text|tool_use|tool_result|api_error, content: the block as sent to or received from the Messages API, status completed|in_flight|interrupted (tool results), tokens: estimated tokens of the block (exact usage per call is in pgflight.costs), attempt_id: the attempt that wrote it. Range-partitioned by agent_run_id: a partition is dropped once every agent run in it is purged.';

CREATE SEQUENCE pgflight.traces_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE pgflight.traces_id_seq OWNED BY pgflight.traces.id;

CREATE TABLE pgflight.traces_default (
    id bigint DEFAULT nextval('pgflight.traces_id_seq'::regclass) NOT NULL,
    agent_run_id bigint NOT NULL,
    iteration integer NOT NULL,
    seq integer NOT NULL,
    role text NOT NULL,
    block_type text NOT NULL,
    tool_use_id text,
    tool_name text,
    content jsonb,
    status text DEFAULT 'completed'::text NOT NULL,
    tokens integer,
    attempt_id bigint,
    created_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    updated_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT block_type_is_a_name CHECK ((block_type ~ '^[a-z][a-z0-9_]{0,63}$'::text)),
    CONSTRAINT iteration_is_not_negative CHECK ((LEAST(iteration, seq) >= 0)),
    CONSTRAINT role_is_known CHECK ((role = ANY ('{user,assistant,system}'::text[]))),
    CONSTRAINT status_is_known CHECK ((status = ANY ('{completed,in_flight,interrupted}'::text[]))),
    CONSTRAINT tool_blocks_name_their_call CHECK (((block_type <> ALL ('{tool_use,tool_result}'::text[])) OR (tool_use_id IS NOT NULL)))
);

CREATE TABLE pgflight.traces_from_0 (
    id bigint DEFAULT nextval('pgflight.traces_id_seq'::regclass) NOT NULL,
    agent_run_id bigint NOT NULL,
    iteration integer NOT NULL,
    seq integer NOT NULL,
    role text NOT NULL,
    block_type text NOT NULL,
    tool_use_id text,
    tool_name text,
    content jsonb,
    status text DEFAULT 'completed'::text NOT NULL,
    tokens integer,
    attempt_id bigint,
    created_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    updated_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT block_type_is_a_name CHECK ((block_type ~ '^[a-z][a-z0-9_]{0,63}$'::text)),
    CONSTRAINT iteration_is_not_negative CHECK ((LEAST(iteration, seq) >= 0)),
    CONSTRAINT role_is_known CHECK ((role = ANY ('{user,assistant,system}'::text[]))),
    CONSTRAINT status_is_known CHECK ((status = ANY ('{completed,in_flight,interrupted}'::text[]))),
    CONSTRAINT tool_blocks_name_their_call CHECK (((block_type <> ALL ('{tool_use,tool_result}'::text[])) OR (tool_use_id IS NOT NULL)))
);

ALTER TABLE ONLY pgflight.traces ATTACH PARTITION pgflight.traces_default DEFAULT;

ALTER TABLE ONLY pgflight.traces ATTACH PARTITION pgflight.traces_from_0 FOR VALUES FROM ('0') TO ('100000');

ALTER TABLE ONLY pgflight.traces ALTER COLUMN id SET DEFAULT nextval('pgflight.traces_id_seq'::regclass);

ALTER TABLE ONLY pgflight.traces
    ADD CONSTRAINT block_is_unique PRIMARY KEY (agent_run_id, iteration, seq);

ALTER TABLE ONLY pgflight.traces_default
    ADD CONSTRAINT traces_default_pkey PRIMARY KEY (agent_run_id, iteration, seq);

ALTER TABLE ONLY pgflight.traces_from_0
    ADD CONSTRAINT traces_from_0_pkey PRIMARY KEY (agent_run_id, iteration, seq);

CREATE UNIQUE INDEX traces_tool_call_idx ON ONLY pgflight.traces USING btree (agent_run_id, tool_use_id, block_type) WHERE (tool_use_id IS NOT NULL);

CREATE UNIQUE INDEX traces_default_agent_run_id_tool_use_id_block_type_idx ON pgflight.traces_default USING btree (agent_run_id, tool_use_id, block_type) WHERE (tool_use_id IS NOT NULL);

CREATE UNIQUE INDEX traces_from_0_agent_run_id_tool_use_id_block_type_idx ON pgflight.traces_from_0 USING btree (agent_run_id, tool_use_id, block_type) WHERE (tool_use_id IS NOT NULL);

ALTER INDEX pgflight.traces_tool_call_idx ATTACH PARTITION pgflight.traces_default_agent_run_id_tool_use_id_block_type_idx;

ALTER INDEX pgflight.block_is_unique ATTACH PARTITION pgflight.traces_default_pkey;

ALTER INDEX pgflight.traces_tool_call_idx ATTACH PARTITION pgflight.traces_from_0_agent_run_id_tool_use_id_block_type_idx;

ALTER INDEX pgflight.block_is_unique ATTACH PARTITION pgflight.traces_from_0_pkey;

commit;
