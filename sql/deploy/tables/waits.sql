-- Deploy pgflight:tables/waits

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.waits (
    id bigint NOT NULL,
    step_id bigint NOT NULL,
    wait_key text NOT NULL,
    kind text NOT NULL,
    workspace_id bigint NOT NULL,
    event_name text,
    event_key text,
    due_at timestamp with time zone,
    default_payload jsonb,
    parked_attempt_id bigint,
    requested_at timestamp with time zone NOT NULL,
    outcome text,
    payload jsonb,
    event_id text,
    resolved_at timestamp with time zone,
    CONSTRAINT event_wait_names_its_event CHECK (((kind <> 'event'::text) OR ((event_name IS NOT NULL) AND (event_key IS NOT NULL)))),
    CONSTRAINT kind_is_known CHECK ((kind = ANY (ARRAY['timer'::text, 'event'::text]))),
    CONSTRAINT outcome_is_known CHECK (((outcome IS NULL) OR (outcome = ANY (ARRAY['elapsed'::text, 'received'::text, 'timed_out'::text])))),
    CONSTRAINT resolved_at_is_set_with_outcome CHECK (((outcome IS NULL) = (resolved_at IS NULL))),
    CONSTRAINT timer_has_a_due_time CHECK (((kind <> 'timer'::text) OR (due_at IS NOT NULL)))
);

COMMENT ON TABLE pgflight.waits IS 'Timers and event waits per step and wait_key. kind: timer | event. due_at: when a timer elapses or an event wait times out (null: no timeout). outcome: elapsed | received | timed_out (null while pending), recorded once. parked_attempt_id: the attempt parked on the wait (awaiting_approval), the one a resolution wakes.';

ALTER TABLE pgflight.waits ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.waits_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY pgflight.waits
    ADD CONSTRAINT waits_pkey PRIMARY KEY (id);

ALTER TABLE ONLY pgflight.waits
    ADD CONSTRAINT waits_step_key_is_unique UNIQUE (step_id, wait_key);

CREATE INDEX waits_pending_due_idx ON pgflight.waits USING btree (due_at) WHERE ((outcome IS NULL) AND (due_at IS NOT NULL));

CREATE INDEX waits_pending_event_idx ON pgflight.waits USING btree (workspace_id, event_name, event_key) WHERE ((outcome IS NULL) AND (kind = 'event'::text));

ALTER TABLE ONLY pgflight.waits
    ADD CONSTRAINT waits_step_id_fkey FOREIGN KEY (step_id) REFERENCES pgflight.steps(id) ON DELETE CASCADE;

ALTER TABLE ONLY pgflight.waits
    ADD CONSTRAINT waits_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES pgflight.workspaces(id) ON DELETE CASCADE;

commit;
