-- Deploy pgflight:tables/agent_runs

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.agent_runs (
    id bigint NOT NULL,
    step_id bigint NOT NULL,
    run_id bigint NOT NULL,
    workspace_id bigint NOT NULL,
    model text NOT NULL,
    system_prompt text DEFAULT ''::text NOT NULL,
    system_prompt_hash text NOT NULL,
    max_iterations integer DEFAULT 25 NOT NULL,
    max_tool_calls integer DEFAULT 50 NOT NULL,
    iterations integer DEFAULT 0 NOT NULL,
    tool_calls integer DEFAULT 0 NOT NULL,
    input_tokens bigint DEFAULT 0 NOT NULL,
    output_tokens bigint DEFAULT 0 NOT NULL,
    cache_creation_tokens bigint DEFAULT 0 NOT NULL,
    cache_read_tokens bigint DEFAULT 0 NOT NULL,
    usd numeric(16,8) DEFAULT 0 NOT NULL,
    budget_ids bigint[] DEFAULT '{}'::bigint[] NOT NULL,
    reserved_usd numeric(16,8) DEFAULT 0 NOT NULL,
    reserved_attempt_id bigint,
    reserved_iteration integer,
    reserved_budget_ids bigint[],
    options jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    updated_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    reserved_call_out boolean DEFAULT false NOT NULL,
    forked_from bigint,
    forked_at integer,
    CONSTRAINT caps_are_positive CHECK (((max_iterations > 0) AND (max_tool_calls >= 0))),
    CONSTRAINT fork_names_its_origin_and_iteration CHECK ((((forked_from IS NULL) = (forked_at IS NULL)) AND (COALESCE(forked_at, 1) >= 1))),
    CONSTRAINT reservation_is_whole CHECK (
CASE
    WHEN (reserved_iteration IS NULL) THEN ((reserved_usd = 0.0) AND (reserved_budget_ids IS NULL))
    ELSE (reserved_attempt_id IS NOT NULL)
END),
    CONSTRAINT totals_are_not_negative CHECK (((LEAST(iterations, tool_calls) >= 0) AND (usd >= 0.0)))
)
WITH (fillfactor='80');

COMMENT ON TABLE pgflight.agent_runs IS 'One per agent step, across its attempts. max_iterations / max_tool_calls: per-agent caps (model calls, tool calls). Totals: iterations, tool_calls, tokens, usd (USD). budget_ids: the tree budgets (pgflight.budgets: the run, every ancestor agent with a cap, this agent) that bind its spend. reserved_*: the USD reserved for the model call in flight (attempt, iteration, budgets), replaced by the actual cost when record_model_call settles it, released by enforce_budgets when the attempt lapsed.';

COMMENT ON COLUMN pgflight.agent_runs.reserved_attempt_id IS 'The attempt that last reserved (kept after the reservation is settled, so iterations update the row HOT); the reservation is held while reserved_iteration is set. Cleared by enforce_budgets once the attempt is no longer leased.';

COMMENT ON COLUMN pgflight.agent_runs.reserved_call_out IS 'true while the held reservation is for a call that is about to be made or is out (its outcome is unknown until recorded); false for a reservation taken ahead of its call. A reservation released with its call out is charged as a costs row marked unknown_outcome.';

COMMENT ON COLUMN pgflight.agent_runs.forked_from IS 'The agent run this one was forked from (fork_agent); null: not a fork.';

COMMENT ON COLUMN pgflight.agent_runs.forked_at IS 'Of a fork: the first iteration it asked of the model itself (iterations before it are the original''s, reused at USD 0).';

ALTER TABLE pgflight.agent_runs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.agent_runs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY pgflight.agent_runs
    ADD CONSTRAINT agent_run_is_unique_per_step UNIQUE (step_id);

ALTER TABLE ONLY pgflight.agent_runs
    ADD CONSTRAINT agent_runs_pkey PRIMARY KEY (id);

CREATE INDEX agent_runs_reserved_idx ON pgflight.agent_runs USING btree (reserved_attempt_id) WHERE (reserved_attempt_id IS NOT NULL);

CREATE INDEX agent_runs_run_idx ON pgflight.agent_runs USING btree (run_id);

ALTER TABLE ONLY pgflight.agent_runs
    ADD CONSTRAINT agent_runs_run_id_fkey FOREIGN KEY (run_id) REFERENCES pgflight.runs(id) ON DELETE CASCADE;

ALTER TABLE ONLY pgflight.agent_runs
    ADD CONSTRAINT agent_runs_step_id_fkey FOREIGN KEY (step_id) REFERENCES pgflight.steps(id) ON DELETE CASCADE;

commit;
