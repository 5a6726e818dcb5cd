-- Deploy pgflight:tables/wake_ticket_secret
-- requires: schema
-- One row: a random secret from which wake_ticket_key derives the advisory lock key of a wake
-- ticket. The key mixes the secret with the worker lanes of the login that asks, so a login
-- cannot compute (and hold first) the key a worker of another workspace will try: before, the
-- key was a hash of the recipe names and the ticket alone, and a listener that held it first
-- kept the workers it belonged to asleep until their poll. No lane has a privilege on it.
begin;
set local role pgflight_owner;

create table pgflight.wake_ticket_secret (
  id     boolean primary key default true,
  secret bytea not null default pg_catalog.sha256(pg_catalog.convert_to(
           pg_catalog.gen_random_uuid()::text || pg_catalog.gen_random_uuid()::text, 'UTF8')),
  constraint one_row check (id)
);
insert into pgflight.wake_ticket_secret default values;
comment on table pgflight.wake_ticket_secret is
  'One row: the random secret (32 bytes) wake_ticket_key mixes into every wake ticket''s lock key.';

commit;
