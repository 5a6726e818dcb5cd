-- Deploy pgflight:tables/approvals

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.approvals (
    id bigint NOT NULL,
    step_id bigint NOT NULL,
    gate_key text NOT NULL,
    request jsonb,
    decision text,
    actor text,
    note text,
    default_decision text DEFAULT 'reject'::text NOT NULL,
    requested_at timestamp with time zone,
    expires_at timestamp with time zone,
    decided_at timestamp with time zone,
    payload jsonb,
    CONSTRAINT decided_at_is_set_with_decision CHECK (((decision IS NULL) = (decided_at IS NULL))),
    CONSTRAINT decision_is_known CHECK (((decision IS NULL) OR (decision = ANY (ARRAY['approve'::text, 'reject'::text])))),
    CONSTRAINT default_decision_is_known CHECK ((default_decision = ANY (ARRAY['approve'::text, 'reject'::text])))
);

COMMENT ON TABLE pgflight.approvals IS 'Approval gates per step and gate_key. decision: approve | reject (null while pending). expires_at: when expire_approvals applies default_decision.';

COMMENT ON COLUMN pgflight.approvals.payload IS 'JSON the decider handed back with the decision (approve''s p_payload), null when none; capped by settings.max_approval_request_bytes. A tool gate''s: {"arguments": {...}} or {"message": "..."}.';

ALTER TABLE pgflight.approvals ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.approvals_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY pgflight.approvals
    ADD CONSTRAINT approvals_pkey PRIMARY KEY (id);

ALTER TABLE ONLY pgflight.approvals
    ADD CONSTRAINT gate_key_is_unique_per_step UNIQUE (step_id, gate_key);

CREATE INDEX approvals_expiring_idx ON pgflight.approvals USING btree (expires_at) WHERE (decision IS NULL);

ALTER TABLE ONLY pgflight.approvals
    ADD CONSTRAINT approvals_step_id_fkey FOREIGN KEY (step_id) REFERENCES pgflight.steps(id) ON DELETE CASCADE;

commit;
