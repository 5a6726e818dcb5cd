-- Deploy pgflight:tables/schedules

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.schedules (
    id bigint NOT NULL,
    workspace_id bigint NOT NULL,
    name text NOT NULL,
    cron text NOT NULL,
    time_zone text DEFAULT 'UTC'::text NOT NULL,
    recipe text NOT NULL,
    input jsonb DEFAULT '{}'::jsonb NOT NULL,
    run_options jsonb DEFAULT '{}'::jsonb NOT NULL,
    overlap text DEFAULT 'skip'::text NOT NULL,
    seconds integer[] NOT NULL,
    minutes integer[] NOT NULL,
    hours integer[] NOT NULL,
    days integer[] NOT NULL,
    months integer[] NOT NULL,
    weekdays integer[] NOT NULL,
    any_day boolean NOT NULL,
    any_weekday boolean NOT NULL,
    next_fire_at timestamp with time zone,
    pending_fire_at timestamp with time zone,
    last_fire_at timestamp with time zone,
    last_run_id bigint,
    created_by text NOT NULL,
    created_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    updated_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT name_is_not_blank CHECK (((btrim(name) <> ''::text) AND (length(name) <= 200))),
    CONSTRAINT overlap_is_known CHECK ((overlap = ANY (ARRAY['skip'::text, 'queue_one'::text, 'allow'::text]))),
    CONSTRAINT recipe_is_not_blank CHECK (((btrim(recipe) <> ''::text) AND (length(recipe) <= 200)))
);

COMMENT ON TABLE pgflight.schedules IS 'Recurring runs. cron (5 or 6 fields, seconds first) read on the wall clock of time_zone; overlap: skip (a firing while the previous run is still running is skipped), queue_one (it waits, at most one, and runs when the previous run ends), allow (runs at once). seconds..weekdays, any_day, any_weekday: the parsed expression. next_fire_at: the next firing; pending_fire_at: a queue_one firing waiting for last_run_id to end.';

ALTER TABLE pgflight.schedules ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.schedules_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY pgflight.schedules
    ADD CONSTRAINT schedule_name_is_unique_per_workspace UNIQUE (workspace_id, name);

ALTER TABLE ONLY pgflight.schedules
    ADD CONSTRAINT schedules_pkey PRIMARY KEY (id);

CREATE INDEX schedules_due_idx ON pgflight.schedules USING btree (next_fire_at) WHERE (next_fire_at IS NOT NULL);

CREATE INDEX schedules_pending_idx ON pgflight.schedules USING btree (pending_fire_at) WHERE (pending_fire_at IS NOT NULL);

ALTER TABLE ONLY pgflight.schedules
    ADD CONSTRAINT schedules_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES pgflight.workspaces(id) ON DELETE CASCADE;

commit;
