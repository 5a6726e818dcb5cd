-- Deploy pgflight:tables/workers
-- requires: schema
-- Registered worker processes: which recipes they run, when they were last heard from.
begin;
set local role pgflight_owner;

create table pgflight.workers (
  id            bigint generated always as identity primary key,
  name          text not null,
  hostname      text,
  pid           integer,
  recipes       text[],
  options       jsonb not null default '{}',
  started_at    timestamptz not null default pgflight._now(),
  last_seen_at  timestamptz not null default pgflight._now(),
  stopped_at    timestamptz
);
comment on table pgflight.workers is
  'Worker processes. last_seen_at is renewed by heartbeat; a worker is alive while its leases are.';

commit;
