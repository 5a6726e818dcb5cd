-- Deploy pgflight:tables/costs

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.costs (
    id bigint NOT NULL,
    agent_run_id bigint NOT NULL,
    iteration integer NOT NULL,
    step_id bigint NOT NULL,
    run_id bigint NOT NULL,
    workspace_id bigint NOT NULL,
    model text NOT NULL,
    input_tokens bigint DEFAULT 0 NOT NULL,
    output_tokens bigint DEFAULT 0 NOT NULL,
    cache_creation_tokens bigint DEFAULT 0 NOT NULL,
    cache_read_tokens bigint DEFAULT 0 NOT NULL,
    usd numeric(16,8) NOT NULL,
    stop_reason text,
    retries integer DEFAULT 0 NOT NULL,
    attempt_id bigint,
    at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    lease_lost boolean DEFAULT false NOT NULL,
    unknown_outcome boolean DEFAULT false NOT NULL,
    cache_creation_1h_tokens bigint DEFAULT 0 NOT NULL,
    web_search_requests bigint DEFAULT 0 NOT NULL,
    budget_ids bigint[],
    reused boolean DEFAULT false NOT NULL,
    CONSTRAINT reused_costs_nothing CHECK (((NOT reused) OR ((usd = 0.0) AND (NOT lease_lost)))),
    CONSTRAINT server_tool_counts_are_not_negative CHECK ((LEAST(cache_creation_1h_tokens, web_search_requests) >= 0)),
    CONSTRAINT tokens_are_not_negative CHECK ((LEAST(input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens) >= 0)),
    CONSTRAINT unknown_outcome_is_lease_lost CHECK ((lease_lost OR (NOT unknown_outcome))),
    CONSTRAINT usd_is_not_negative CHECK ((usd >= 0.0))
)
PARTITION BY RANGE (agent_run_id);

COMMENT ON TABLE pgflight.costs IS 'One row per model call: tokens (input, output, cache_creation, cache_read), usd (USD = tokens x model_prices / 1e6), the stop_reason, the transient errors retried before it (retries), and which agent, step, run and workspace it is billed to. Range-partitioned by agent_run_id: a partition is dropped once every agent run in it is purged.';

COMMENT ON COLUMN pgflight.costs.lease_lost IS 'true: a model call paid for by an attempt that had lost its lease (record_orphan_cost); charged to the budgets and run_audit, not part of the transcript.';

COMMENT ON COLUMN pgflight.costs.unknown_outcome IS 'true: a call whose attempt ended with the request out and no answer recorded, charged at its reservation (usd; tokens unknown, 0); settled to the real figures if the answer is recorded late.';

COMMENT ON COLUMN pgflight.costs.cache_creation_1h_tokens IS 'Of cache_creation_tokens, the one-hour cache writes (usage.cache_creation.ephemeral_1h_input_tokens).';

COMMENT ON COLUMN pgflight.costs.web_search_requests IS 'Server-side web searches of the call (usage.server_tool_use.web_search_requests).';

COMMENT ON COLUMN pgflight.costs.budget_ids IS 'Of an unknown_outcome row: the budgets its reservation was charged to (a late answer settles them); null otherwise.';

COMMENT ON COLUMN pgflight.costs.reused IS 'true: an iteration a fork took from the agent it was forked from: USD 0 and no tokens (the original''s row paid).';

CREATE SEQUENCE pgflight.costs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE pgflight.costs_id_seq OWNED BY pgflight.costs.id;

CREATE TABLE pgflight.costs_default (
    id bigint DEFAULT nextval('pgflight.costs_id_seq'::regclass) NOT NULL,
    agent_run_id bigint NOT NULL,
    iteration integer NOT NULL,
    step_id bigint NOT NULL,
    run_id bigint NOT NULL,
    workspace_id bigint NOT NULL,
    model text NOT NULL,
    input_tokens bigint DEFAULT 0 NOT NULL,
    output_tokens bigint DEFAULT 0 NOT NULL,
    cache_creation_tokens bigint DEFAULT 0 NOT NULL,
    cache_read_tokens bigint DEFAULT 0 NOT NULL,
    usd numeric(16,8) NOT NULL,
    stop_reason text,
    retries integer DEFAULT 0 NOT NULL,
    attempt_id bigint,
    at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    lease_lost boolean DEFAULT false NOT NULL,
    unknown_outcome boolean DEFAULT false NOT NULL,
    cache_creation_1h_tokens bigint DEFAULT 0 NOT NULL,
    web_search_requests bigint DEFAULT 0 NOT NULL,
    budget_ids bigint[],
    reused boolean DEFAULT false NOT NULL,
    CONSTRAINT reused_costs_nothing CHECK (((NOT reused) OR ((usd = 0.0) AND (NOT lease_lost)))),
    CONSTRAINT server_tool_counts_are_not_negative CHECK ((LEAST(cache_creation_1h_tokens, web_search_requests) >= 0)),
    CONSTRAINT tokens_are_not_negative CHECK ((LEAST(input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens) >= 0)),
    CONSTRAINT unknown_outcome_is_lease_lost CHECK ((lease_lost OR (NOT unknown_outcome))),
    CONSTRAINT usd_is_not_negative CHECK ((usd >= 0.0))
);

CREATE TABLE pgflight.costs_from_0 (
    id bigint DEFAULT nextval('pgflight.costs_id_seq'::regclass) NOT NULL,
    agent_run_id bigint NOT NULL,
    iteration integer NOT NULL,
    step_id bigint NOT NULL,
    run_id bigint NOT NULL,
    workspace_id bigint NOT NULL,
    model text NOT NULL,
    input_tokens bigint DEFAULT 0 NOT NULL,
    output_tokens bigint DEFAULT 0 NOT NULL,
    cache_creation_tokens bigint DEFAULT 0 NOT NULL,
    cache_read_tokens bigint DEFAULT 0 NOT NULL,
    usd numeric(16,8) NOT NULL,
    stop_reason text,
    retries integer DEFAULT 0 NOT NULL,
    attempt_id bigint,
    at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    lease_lost boolean DEFAULT false NOT NULL,
    unknown_outcome boolean DEFAULT false NOT NULL,
    cache_creation_1h_tokens bigint DEFAULT 0 NOT NULL,
    web_search_requests bigint DEFAULT 0 NOT NULL,
    budget_ids bigint[],
    reused boolean DEFAULT false NOT NULL,
    CONSTRAINT reused_costs_nothing CHECK (((NOT reused) OR ((usd = 0.0) AND (NOT lease_lost)))),
    CONSTRAINT server_tool_counts_are_not_negative CHECK ((LEAST(cache_creation_1h_tokens, web_search_requests) >= 0)),
    CONSTRAINT tokens_are_not_negative CHECK ((LEAST(input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens) >= 0)),
    CONSTRAINT unknown_outcome_is_lease_lost CHECK ((lease_lost OR (NOT unknown_outcome))),
    CONSTRAINT usd_is_not_negative CHECK ((usd >= 0.0))
);

ALTER TABLE ONLY pgflight.costs ATTACH PARTITION pgflight.costs_default DEFAULT;

ALTER TABLE ONLY pgflight.costs ATTACH PARTITION pgflight.costs_from_0 FOR VALUES FROM ('0') TO ('100000');

ALTER TABLE ONLY pgflight.costs ALTER COLUMN id SET DEFAULT nextval('pgflight.costs_id_seq'::regclass);

ALTER TABLE ONLY pgflight.costs
    ADD CONSTRAINT costs_pkey PRIMARY KEY (id, agent_run_id);

ALTER TABLE ONLY pgflight.costs_default
    ADD CONSTRAINT costs_default_pkey PRIMARY KEY (id, agent_run_id);

ALTER TABLE ONLY pgflight.costs_from_0
    ADD CONSTRAINT costs_from_0_pkey PRIMARY KEY (id, agent_run_id);

CREATE INDEX costs_at_idx ON ONLY pgflight.costs USING btree (at);

CREATE UNIQUE INDEX one_orphan_per_attempt ON ONLY pgflight.costs USING btree (agent_run_id, iteration, attempt_id) WHERE lease_lost;

CREATE UNIQUE INDEX costs_default_agent_run_id_iteration_attempt_id_idx ON pgflight.costs_default USING btree (agent_run_id, iteration, attempt_id) WHERE lease_lost;

CREATE UNIQUE INDEX one_call_per_iteration ON ONLY pgflight.costs USING btree (agent_run_id, iteration) WHERE (NOT lease_lost);

CREATE UNIQUE INDEX costs_default_agent_run_id_iteration_idx ON pgflight.costs_default USING btree (agent_run_id, iteration) WHERE (NOT lease_lost);

CREATE INDEX costs_default_at_idx ON pgflight.costs_default USING btree (at);

CREATE INDEX costs_run_idx ON ONLY pgflight.costs USING btree (run_id);

CREATE INDEX costs_default_run_id_idx ON pgflight.costs_default USING btree (run_id);

CREATE UNIQUE INDEX costs_from_0_agent_run_id_iteration_attempt_id_idx ON pgflight.costs_from_0 USING btree (agent_run_id, iteration, attempt_id) WHERE lease_lost;

CREATE UNIQUE INDEX costs_from_0_agent_run_id_iteration_idx ON pgflight.costs_from_0 USING btree (agent_run_id, iteration) WHERE (NOT lease_lost);

CREATE INDEX costs_from_0_at_idx ON pgflight.costs_from_0 USING btree (at);

CREATE INDEX costs_from_0_run_id_idx ON pgflight.costs_from_0 USING btree (run_id);

ALTER INDEX pgflight.one_orphan_per_attempt ATTACH PARTITION pgflight.costs_default_agent_run_id_iteration_attempt_id_idx;

ALTER INDEX pgflight.one_call_per_iteration ATTACH PARTITION pgflight.costs_default_agent_run_id_iteration_idx;

ALTER INDEX pgflight.costs_at_idx ATTACH PARTITION pgflight.costs_default_at_idx;

ALTER INDEX pgflight.costs_pkey ATTACH PARTITION pgflight.costs_default_pkey;

ALTER INDEX pgflight.costs_run_idx ATTACH PARTITION pgflight.costs_default_run_id_idx;

ALTER INDEX pgflight.one_orphan_per_attempt ATTACH PARTITION pgflight.costs_from_0_agent_run_id_iteration_attempt_id_idx;

ALTER INDEX pgflight.one_call_per_iteration ATTACH PARTITION pgflight.costs_from_0_agent_run_id_iteration_idx;

ALTER INDEX pgflight.costs_at_idx ATTACH PARTITION pgflight.costs_from_0_at_idx;

ALTER INDEX pgflight.costs_pkey ATTACH PARTITION pgflight.costs_from_0_pkey;

ALTER INDEX pgflight.costs_run_idx ATTACH PARTITION pgflight.costs_from_0_run_id_idx;

commit;
