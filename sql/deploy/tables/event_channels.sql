-- Deploy pgflight:tables/event_channels

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.event_channels (
    workspace_id bigint NOT NULL,
    name text NOT NULL,
    key text NOT NULL,
    touched_at timestamp with time zone NOT NULL
);

COMMENT ON TABLE pgflight.event_channels IS 'Lock rows: one per workspace, event name and key; wait_event and emit_event lock it first, so no wake-up is lost.';

ALTER TABLE ONLY pgflight.event_channels
    ADD CONSTRAINT event_channels_pkey PRIMARY KEY (workspace_id, name, key);

CREATE INDEX event_channels_touched_idx ON pgflight.event_channels USING btree (touched_at);

ALTER TABLE ONLY pgflight.event_channels
    ADD CONSTRAINT event_channels_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES pgflight.workspaces(id) ON DELETE CASCADE;

commit;
