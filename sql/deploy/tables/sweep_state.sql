-- Deploy pgflight:tables/sweep_state

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.sweep_state (
    id boolean DEFAULT true NOT NULL,
    last_pass_at timestamp with time zone,
    last_partitions_at timestamp with time zone,
    reclaim_batch integer DEFAULT 1000 NOT NULL,
    CONSTRAINT one_row CHECK (id),
    CONSTRAINT reclaim_batch_is_positive CHECK ((reclaim_batch > 0))
)
WITH (fillfactor='50');

COMMENT ON TABLE pgflight.sweep_state IS 'The sweeps'' own state, one row: last_pass_at (end of the last run_sweeps), last_partitions_at (last maintain_partitions), reclaim_batch (the reclaim limit of the next pass, grown while a backlog lasts).';

ALTER TABLE ONLY pgflight.sweep_state
    ADD CONSTRAINT sweep_state_pkey PRIMARY KEY (id);

INSERT INTO pgflight.sweep_state (id, last_pass_at, last_partitions_at, reclaim_batch) VALUES (true, NULL, NULL, 1000);

commit;
