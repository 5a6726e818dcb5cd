-- Deploy pgflight:tables/runs

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.runs (
    id bigint NOT NULL,
    workspace_id bigint NOT NULL,
    recipe text NOT NULL,
    status text DEFAULT 'running'::text NOT NULL,
    idempotency_key text,
    input_hash text NOT NULL,
    root_step_id bigint,
    submitted_by text,
    options jsonb DEFAULT '{}'::jsonb NOT NULL,
    max_usd numeric(14,6),
    max_wall_s double precision,
    max_iterations integer,
    max_tool_calls integer,
    created_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    finished_at timestamp with time zone,
    CONSTRAINT finished_at_is_set_when_terminal CHECK (((status = 'running'::text) = (finished_at IS NULL))),
    CONSTRAINT status_is_known CHECK ((status = ANY (ARRAY['running'::text, 'succeeded'::text, 'failed'::text, 'cancelled'::text])))
)
WITH (fillfactor='80');

COMMENT ON TABLE pgflight.runs IS 'Top-level jobs. status: running | succeeded | failed (root step dead-lettered) | cancelled. input_hash: sha256 of the input JSON, to tell a repeated idempotency key from a conflicting one. max_usd (USD), max_wall_s (seconds), max_iterations, max_tool_calls: budgets of the whole tree.';

ALTER TABLE pgflight.runs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.runs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY pgflight.runs
    ADD CONSTRAINT runs_pkey PRIMARY KEY (id);

CREATE UNIQUE INDEX idempotency_key_is_unique_per_workspace_idx ON pgflight.runs USING btree (workspace_id, idempotency_key) WHERE (idempotency_key IS NOT NULL);

CREATE INDEX runs_created_idx ON pgflight.runs USING btree (created_at);

ALTER TABLE ONLY pgflight.runs
    ADD CONSTRAINT runs_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES pgflight.workspaces(id);

commit;
