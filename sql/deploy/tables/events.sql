-- Deploy pgflight:tables/events

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.events (
    id bigint NOT NULL,
    at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    run_id bigint,
    step_id bigint,
    attempt_id bigint,
    from_status text,
    to_status text,
    worker_id bigint,
    actor text,
    reason text NOT NULL,
    detail jsonb
)
PARTITION BY RANGE (at);

COMMENT ON TABLE pgflight.events IS 'Append-only log of transitions, partitioned by day on at (retention drops whole days, settings.events_keep_s). reason names the event: queued, claimed, started, succeeded, failed, retry_scheduled, lease_expired, deadline_exceeded, dead_lettered, released, cancel_requested, cancelled, children_spawned, parent_resumed, approval_requested, approval_decided, stale_result_rejected, retried, replayed, budget_exceeded.';

CREATE SEQUENCE pgflight.events_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE pgflight.events_id_seq OWNED BY pgflight.events.id;

CREATE TABLE pgflight.events_default (
    id bigint DEFAULT nextval('pgflight.events_id_seq'::regclass) NOT NULL,
    at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    run_id bigint,
    step_id bigint,
    attempt_id bigint,
    from_status text,
    to_status text,
    worker_id bigint,
    actor text,
    reason text NOT NULL,
    detail jsonb
);

ALTER TABLE ONLY pgflight.events ATTACH PARTITION pgflight.events_default DEFAULT;

ALTER TABLE ONLY pgflight.events ALTER COLUMN id SET DEFAULT nextval('pgflight.events_id_seq'::regclass);

ALTER TABLE ONLY pgflight.events
    ADD CONSTRAINT events_pkey PRIMARY KEY (id, at);

ALTER TABLE ONLY pgflight.events_default
    ADD CONSTRAINT events_default_pkey PRIMARY KEY (id, at);

CREATE INDEX events_run_idx ON ONLY pgflight.events USING btree (run_id, id);

CREATE INDEX events_default_run_id_id_idx ON pgflight.events_default USING btree (run_id, id);

ALTER INDEX pgflight.events_pkey ATTACH PARTITION pgflight.events_default_pkey;

ALTER INDEX pgflight.events_run_idx ATTACH PARTITION pgflight.events_default_run_id_id_idx;

do $$
declare
  v_today date := (pg_catalog.now() at time zone 'UTC')::date;
  v_day date;
begin
  for i in -1 .. 3 loop
    v_day := v_today + i;
    execute pg_catalog.format(
      'create table pgflight.%I partition of pgflight.events for values from (%L) to (%L)',
      'events_' || pg_catalog.to_char(v_day, 'YYYYMMDD'), v_day::timestamp at time zone 'UTC',
      (v_day + 1)::timestamp at time zone 'UTC');
  end loop;
end
$$;

commit;
