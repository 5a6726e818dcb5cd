-- Deploy pgflight:tables/settings_waits
-- requires: tables/settings_json_depth
-- Settings of waits (docs/waiting.md): how long an emitted event is kept so that a wait that
-- starts later still sees it, and the cap of an event's payload.
begin;
set local role pgflight_owner;

alter table pgflight.settings
  add column event_retention_s        double precision not null default 604800,
  add column max_event_payload_bytes  bigint not null default 1048576,
  add constraint event_retention_is_positive check (event_retention_s > 0),
  add constraint max_event_payload_bytes_is_positive check (max_event_payload_bytes > 0);

comment on column pgflight.settings.event_retention_s is
  'Seconds an emitted event is kept (default 7 days): a wait for its name and key that starts within it '
  'receives it at once; expire_waits deletes it afterwards. Also how long its event id stays idempotent.';
comment on column pgflight.settings.max_event_payload_bytes is
  'Cap (bytes of JSON text) of emit_event''s payload and of wait_event''s default payload.';

commit;
