-- Deploy pgflight:tables/step_attempts

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.step_attempts (
    id bigint NOT NULL,
    step_id bigint NOT NULL,
    run_id bigint NOT NULL,
    attempt_no integer NOT NULL,
    recipe text NOT NULL,
    priority integer DEFAULT 0 NOT NULL,
    status text DEFAULT 'queued'::text NOT NULL,
    available_after timestamp with time zone NOT NULL,
    worker_id bigint,
    fencing_token bigint,
    lease_s double precision,
    claimed_at timestamp with time zone,
    started_at timestamp with time zone,
    lease_expires_at timestamp with time zone,
    deadline_at timestamp with time zone,
    finished_at timestamp with time zone,
    result jsonb,
    error jsonb,
    reason text,
    created_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    workspace_id bigint NOT NULL,
    concurrency_key text,
    concurrency_limit integer,
    claim_event_id bigint,
    finish_event_id bigint,
    slots smallint DEFAULT 0 NOT NULL,
    queue_event_id bigint,
    queue_delay_s double precision,
    CONSTRAINT finished_at_is_after_claimed_at CHECK (((finished_at IS NULL) OR (claimed_at IS NULL) OR (finished_at >= claimed_at))),
    CONSTRAINT leased_attempt_has_owner CHECK (((status <> ALL (ARRAY['claimed'::text, 'running'::text, 'cancel_requested'::text])) OR ((worker_id IS NOT NULL) AND (fencing_token IS NOT NULL) AND (lease_expires_at IS NOT NULL)))),
    CONSTRAINT status_is_known CHECK ((status = ANY (ARRAY['queued'::text, 'claimed'::text, 'running'::text, 'cancel_requested'::text, 'awaiting_children'::text, 'awaiting_approval'::text, 'succeeded'::text, 'failed'::text, 'lease_expired'::text, 'timed_out'::text, 'dead_letter'::text, 'cancelled'::text])))
)
WITH (fillfactor='80');

COMMENT ON TABLE pgflight.step_attempts IS 'Attempts (tries) of steps. Live statuses: queued, claimed, running, cancel_requested, awaiting_children, awaiting_approval. An attempt ends failed, lease_expired or timed_out (another attempt follows), or succeeded, dead_letter or cancelled (the step is terminal). Claim metadata (worker_id, claimed_at, lease_expires_at, fencing_token) is never cleared. lease_s in seconds.';

COMMENT ON COLUMN pgflight.step_attempts.workspace_id IS 'The run''s workspace, copied so the claim reads one table.';

COMMENT ON COLUMN pgflight.step_attempts.concurrency_key IS 'The step''s concurrency key and limit, copied like recipe and priority. A queued attempt with available_after = ''infinity'' is parked: its key was full; a freed slot wakes it.';

COMMENT ON COLUMN pgflight.step_attempts.claim_event_id IS 'Events id of this attempt''s started claim (queued -> running), shown by run_events; null: the claim, if any, is an events row.';

COMMENT ON COLUMN pgflight.step_attempts.finish_event_id IS 'Events id of this attempt''s success from running (running -> succeeded), shown by run_events; null: the end, if any, is an events row.';

COMMENT ON COLUMN pgflight.step_attempts.slots IS 'What this lease is counted against: bit 1 the global cap, bit 2 its workspace''s cap (0: none).';

COMMENT ON COLUMN pgflight.step_attempts.queue_event_id IS 'Events id of the transition that queued this attempt when it wrote no events row, shown by run_events: a submit (a run''s root step, attempt 1; actor runs.submitted_by) or, with queue_delay_s, a reclaim''s retry (reason retry_scheduled, actor reclaim); null: the queued, if any, is an events row.';

COMMENT ON COLUMN pgflight.step_attempts.queue_delay_s IS 'Backoff in seconds of the reclaim''s retry that queued this attempt (its queue_event_id, shown by run_events as retry_scheduled, actor reclaim, detail delay_s rounded to ms and attempt_no); null: the queue_event_id, if any, is a submit''s.';

ALTER TABLE pgflight.step_attempts ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.step_attempts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY pgflight.step_attempts
    ADD CONSTRAINT attempt_no_is_unique_per_step UNIQUE (step_id, attempt_no);

ALTER TABLE ONLY pgflight.step_attempts
    ADD CONSTRAINT step_attempts_pkey PRIMARY KEY (id);

CREATE INDEX step_attempts_claim_event_idx ON pgflight.step_attempts USING btree (claim_event_id) WHERE (claim_event_id IS NOT NULL);

CREATE INDEX step_attempts_dead_letter_idx ON pgflight.step_attempts USING btree (id) WHERE (status = 'dead_letter'::text);

CREATE INDEX step_attempts_deadline_idx ON pgflight.step_attempts USING btree (deadline_at) WHERE ((status = ANY (ARRAY['claimed'::text, 'running'::text])) AND (deadline_at IS NOT NULL));

CREATE INDEX step_attempts_finish_event_idx ON pgflight.step_attempts USING btree (finish_event_id) WHERE (finish_event_id IS NOT NULL);

CREATE INDEX step_attempts_leased_key_idx ON pgflight.step_attempts USING btree (workspace_id, concurrency_key) WHERE ((status = ANY (ARRAY['claimed'::text, 'running'::text, 'cancel_requested'::text])) AND (concurrency_key IS NOT NULL));

CREATE INDEX step_attempts_leased_ws_idx ON pgflight.step_attempts USING btree (workspace_id) WHERE (status = ANY (ARRAY['claimed'::text, 'running'::text, 'cancel_requested'::text]));

CREATE UNIQUE INDEX step_attempts_one_live_per_step_idx ON pgflight.step_attempts USING btree (step_id) WHERE (status = ANY (ARRAY['queued'::text, 'claimed'::text, 'running'::text, 'cancel_requested'::text, 'awaiting_children'::text, 'awaiting_approval'::text]));

CREATE INDEX step_attempts_parked_idx ON pgflight.step_attempts USING btree (status, step_id) WHERE (status = ANY (ARRAY['awaiting_children'::text, 'awaiting_approval'::text]));

CREATE INDEX step_attempts_queued_key_idx ON pgflight.step_attempts USING btree (workspace_id, concurrency_key, priority DESC, id) WHERE ((status = 'queued'::text) AND (concurrency_key IS NOT NULL));

CREATE INDEX step_attempts_recipe_ready_idx ON pgflight.step_attempts USING btree (recipe, workspace_id, priority DESC, available_after, id) WHERE ((status = 'queued'::text) AND (available_after < 'infinity'::timestamp with time zone));

CREATE INDEX step_attempts_ws_ready_idx ON pgflight.step_attempts USING btree (workspace_id, priority DESC, available_after, id) WHERE ((status = 'queued'::text) AND (available_after < 'infinity'::timestamp with time zone));

CREATE TRIGGER step_attempts_fill_flow BEFORE INSERT ON pgflight.step_attempts FOR EACH ROW WHEN ((new.workspace_id IS NULL)) EXECUTE FUNCTION pgflight._fill_attempt_flow();

CREATE TRIGGER step_attempts_key_slot_freed AFTER UPDATE OF status ON pgflight.step_attempts FOR EACH ROW WHEN (((old.concurrency_key IS NOT NULL) AND (old.status = ANY (ARRAY['queued'::text, 'claimed'::text, 'running'::text, 'cancel_requested'::text])) AND (new.status <> ALL (ARRAY['queued'::text, 'claimed'::text, 'running'::text, 'cancel_requested'::text])))) EXECUTE FUNCTION pgflight._key_slot_freed();

CREATE TRIGGER step_attempts_return_slots BEFORE UPDATE OF status ON pgflight.step_attempts FOR EACH ROW WHEN (((old.slots <> 0) AND (old.status = ANY (ARRAY['claimed'::text, 'running'::text, 'cancel_requested'::text])) AND (new.status <> ALL (ARRAY['claimed'::text, 'running'::text, 'cancel_requested'::text])))) EXECUTE FUNCTION pgflight._return_slots();

ALTER TABLE ONLY pgflight.step_attempts
    ADD CONSTRAINT step_attempts_step_id_fkey FOREIGN KEY (step_id) REFERENCES pgflight.steps(id) ON DELETE CASCADE;

commit;
