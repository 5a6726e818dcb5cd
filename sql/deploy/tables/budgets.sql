-- Deploy pgflight:tables/budgets

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.budgets (
    id bigint NOT NULL,
    scope text NOT NULL,
    workspace_id bigint NOT NULL,
    run_id bigint,
    step_id bigint,
    day date,
    limit_usd numeric(16,8),
    max_wall_s double precision,
    started_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    spent_usd numeric(16,8) DEFAULT 0 NOT NULL,
    reserved_usd numeric(16,8) DEFAULT 0 NOT NULL,
    exceeded_at timestamp with time zone,
    CONSTRAINT amounts_are_not_negative CHECK ((LEAST(spent_usd, reserved_usd, limit_usd) >= 0.0)),
    CONSTRAINT max_wall_is_positive CHECK ((max_wall_s > '0'::double precision)),
    CONSTRAINT scope_is_known CHECK ((scope = ANY ('{run,step,workspace_day}'::text[]))),
    CONSTRAINT scope_names_its_key CHECK ((((run_id IS NOT NULL) = (scope = ANY ('{run,step}'::text[]))) AND ((day IS NULL) = (scope = ANY ('{run,step}'::text[]))) AND ((step_id IS NOT NULL) = (scope = 'step'::text))))
);

COMMENT ON TABLE pgflight.budgets IS 'Spend budgets: scope run | step (an agent''s subtree) | workspace_day (UTC day). limit_usd (USD, null: no USD cap), max_wall_s (seconds from started_at, null: none), spent_usd and reserved_usd (USD). Invariant held by admission: spent + reserved <= limit, except the documented overshoot of calls whose actual cost exceeded their estimate. exceeded_at: when enforce_budgets cancelled the tree.';

ALTER TABLE pgflight.budgets ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.budgets_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY pgflight.budgets
    ADD CONSTRAINT budgets_pkey PRIMARY KEY (id);

CREATE INDEX budgets_open_trees_idx ON pgflight.budgets USING btree (id) WHERE ((scope <> 'workspace_day'::text) AND (exceeded_at IS NULL));

CREATE UNIQUE INDEX budgets_run_idx ON pgflight.budgets USING btree (run_id) WHERE (scope = 'run'::text);

CREATE UNIQUE INDEX budgets_step_idx ON pgflight.budgets USING btree (step_id) WHERE (scope = 'step'::text);

CREATE UNIQUE INDEX budgets_workspace_day_idx ON pgflight.budgets USING btree (workspace_id, day) WHERE (scope = 'workspace_day'::text);

ALTER TABLE ONLY pgflight.budgets
    ADD CONSTRAINT budgets_run_id_fkey FOREIGN KEY (run_id) REFERENCES pgflight.runs(id) ON DELETE CASCADE;

ALTER TABLE ONLY pgflight.budgets
    ADD CONSTRAINT budgets_step_id_fkey FOREIGN KEY (step_id) REFERENCES pgflight.steps(id) ON DELETE CASCADE;

ALTER TABLE ONLY pgflight.budgets
    ADD CONSTRAINT budgets_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES pgflight.workspaces(id) ON DELETE CASCADE;

commit;
