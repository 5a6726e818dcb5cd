-- Deploy pgflight:tables/settings
-- requires: schema
-- Engine-wide knobs, one row. Read by the API on every call that needs them; changed by the
-- operator with a plain UPDATE as pgflight_owner.
begin;
set local role pgflight_owner;

create table pgflight.settings (
  singleton           boolean primary key default true,
  max_input_bytes     bigint  not null default 16777216,
  default_lease_s     double precision not null default 30,
  default_max_attempts integer not null default 3,
  reclaim_in_claim    integer not null default 16,
  allow_fake_clock    boolean not null default false,
  purge_after_s       double precision not null default 604800,
  constraint settings_has_one_row check (singleton),
  constraint max_input_bytes_is_positive check (max_input_bytes > 0),
  constraint default_lease_is_positive check (default_lease_s > 0),
  constraint default_max_attempts_is_positive check (default_max_attempts > 0),
  constraint reclaim_in_claim_is_not_negative check (reclaim_in_claim >= 0)
);
insert into pgflight.settings default values;

comment on table pgflight.settings is
  'Engine-wide settings, exactly one row. max_input_bytes caps a step input (bytes of its JSON text); '
  'default_lease_s (seconds) and default_max_attempts apply when a run does not say; reclaim_in_claim '
  'bounds the expired leases each claim_batch call reclaims first; allow_fake_clock lets a session '
  'move pgflight._now() with SET pgflight.fake_now (tests only); purge_after_s is the retention of '
  'finished runs in seconds.';

commit;
