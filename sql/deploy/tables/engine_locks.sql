-- Deploy pgflight:tables/engine_locks

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.engine_locks (
    scope text NOT NULL,
    holder_pid integer,
    holder_started_at timestamp with time zone,
    CONSTRAINT holder_is_named_whole CHECK (((holder_pid IS NULL) = (holder_started_at IS NULL)))
)
WITH (fillfactor='50');

COMMENT ON TABLE pgflight.engine_locks IS 'The engine''s locks as rows no login can lock (no lane has a privilege on it): key:<ws>:<key>, slots:<scope>, model_tokens:<ws> locked in the caller''s transaction; sweep_loop a lease held by holder_pid (with holder_started_at, its backend_start) while that backend lives.';

ALTER TABLE ONLY pgflight.engine_locks
    ADD CONSTRAINT engine_locks_pkey PRIMARY KEY (scope);

INSERT INTO pgflight.engine_locks (scope, holder_pid, holder_started_at) VALUES ('sweep_loop', NULL, NULL);

commit;
