-- Revert pgflight:tables/settings_waits
begin;
set local role pgflight_owner;

alter table pgflight.settings
  drop constraint event_retention_is_positive, drop constraint max_event_payload_bytes_is_positive,
  drop column event_retention_s, drop column max_event_payload_bytes;

commit;
