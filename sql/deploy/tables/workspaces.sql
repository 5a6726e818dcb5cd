-- Deploy pgflight:tables/workspaces

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.workspaces (
    id bigint NOT NULL,
    name text NOT NULL,
    daily_usd_cap numeric(14,6),
    max_run_usd numeric(14,6),
    options jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT daily_usd_cap_is_not_negative CHECK (((daily_usd_cap IS NULL) OR (daily_usd_cap >= (0)::numeric))),
    CONSTRAINT max_run_usd_is_not_negative CHECK (((max_run_usd IS NULL) OR (max_run_usd >= (0)::numeric))),
    CONSTRAINT name_is_not_blank CHECK (((btrim(name) <> ''::text) AND (length(name) <= 200)))
);

COMMENT ON TABLE pgflight.workspaces IS 'Tenants. daily_usd_cap: USD a workspace may spend per UTC day on model calls (null: no cap); max_run_usd: default USD cap of each run tree (null: none); options: further per-workspace defaults.';

ALTER TABLE pgflight.workspaces ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.workspaces_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY pgflight.workspaces
    ADD CONSTRAINT workspaces_name_is_unique UNIQUE (name);

ALTER TABLE ONLY pgflight.workspaces
    ADD CONSTRAINT workspaces_pkey PRIMARY KEY (id);

commit;
