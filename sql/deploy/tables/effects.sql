-- Deploy pgflight:tables/effects

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.effects (
    id bigint NOT NULL,
    step_id bigint NOT NULL,
    effect_key text NOT NULL,
    result jsonb,
    attempt_id bigint NOT NULL,
    recorded_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    CONSTRAINT effect_key_is_not_blank CHECK (((btrim(effect_key) <> ''::text) AND (length(effect_key) <= 500)))
);

COMMENT ON TABLE pgflight.effects IS 'Receipts of external side effects: one per (step_id, effect_key), with the effect''s JSON result and the attempt that performed it. The first receipt recorded for a key wins.';

ALTER TABLE pgflight.effects ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.effects_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY pgflight.effects
    ADD CONSTRAINT effect_key_is_unique_per_step UNIQUE (step_id, effect_key);

ALTER TABLE ONLY pgflight.effects
    ADD CONSTRAINT effects_pkey PRIMARY KEY (id);

ALTER TABLE ONLY pgflight.effects
    ADD CONSTRAINT effects_step_id_fkey FOREIGN KEY (step_id) REFERENCES pgflight.steps(id) ON DELETE CASCADE;

commit;
