-- Deploy pgflight:tables/emitted_events

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.emitted_events (
    id bigint NOT NULL,
    workspace_id bigint NOT NULL,
    event_id text NOT NULL,
    name text NOT NULL,
    key text NOT NULL,
    payload jsonb,
    emitted_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    emitted_by text NOT NULL
);

COMMENT ON TABLE pgflight.emitted_events IS 'Events emitted per workspace, name and key, kept until expires_at (settings.event_retention_s after the emit). event_id: the caller''s idempotency key (generated when not given). emitted_by: the login.';

ALTER TABLE pgflight.emitted_events ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.emitted_events_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY pgflight.emitted_events
    ADD CONSTRAINT emitted_event_id_is_unique_per_workspace UNIQUE (workspace_id, event_id);

ALTER TABLE ONLY pgflight.emitted_events
    ADD CONSTRAINT emitted_events_pkey PRIMARY KEY (id);

CREATE INDEX emitted_events_expires_idx ON pgflight.emitted_events USING btree (expires_at);

CREATE INDEX emitted_events_name_key_idx ON pgflight.emitted_events USING btree (workspace_id, name, key, id);

ALTER TABLE ONLY pgflight.emitted_events
    ADD CONSTRAINT emitted_events_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES pgflight.workspaces(id) ON DELETE CASCADE;

commit;
