-- Deploy pgflight:tables/workers

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.workers (
    id bigint NOT NULL,
    name text NOT NULL,
    hostname text,
    pid integer,
    recipes text[],
    options jsonb DEFAULT '{}'::jsonb NOT NULL,
    started_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    last_seen_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    stopped_at timestamp with time zone,
    login name DEFAULT SESSION_USER NOT NULL
);

COMMENT ON TABLE pgflight.workers IS 'Worker processes. last_seen_at is renewed by heartbeat; a worker is alive while its leases are.';

COMMENT ON COLUMN pgflight.workers.login IS 'The login (session_user) that registered the worker; only it may use the worker id.';

ALTER TABLE pgflight.workers ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.workers_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY pgflight.workers
    ADD CONSTRAINT workers_pkey PRIMARY KEY (id);

CREATE INDEX workers_login_live_idx ON pgflight.workers USING btree (login) WHERE (stopped_at IS NULL);

commit;
