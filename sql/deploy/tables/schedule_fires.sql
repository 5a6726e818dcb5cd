-- Deploy pgflight:tables/schedule_fires

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.schedule_fires (
    schedule_id bigint NOT NULL,
    fire_at timestamp with time zone NOT NULL,
    fired_at timestamp with time zone NOT NULL,
    outcome text NOT NULL,
    run_id bigint,
    missed_until timestamp with time zone,
    error jsonb,
    CONSTRAINT outcome_is_known CHECK ((outcome = ANY (ARRAY['submitted'::text, 'skipped'::text, 'queued'::text, 'failed'::text])))
);

COMMENT ON TABLE pgflight.schedule_fires IS 'One row per firing of a schedule, keyed by (schedule, fire time): a firing is decided once. outcome: submitted (run_id), skipped (overlap skip), queued (overlap queue_one: submitted later, when the previous run ends; the row is then updated to submitted), failed (submit_run refused: error says why; the schedule goes on). missed_until: the firing stands for every firing missed up to this instant (catch-up after downtime).';

ALTER TABLE ONLY pgflight.schedule_fires
    ADD CONSTRAINT schedule_fires_pkey PRIMARY KEY (schedule_id, fire_at);

ALTER TABLE ONLY pgflight.schedule_fires
    ADD CONSTRAINT schedule_fires_schedule_id_fkey FOREIGN KEY (schedule_id) REFERENCES pgflight.schedules(id) ON DELETE CASCADE;

commit;
