-- Deploy pgflight:tables/emitted_events
-- requires: tables/workspaces
-- Events emitted by emit_event, kept for settings.event_retention_s so that a wait that starts
-- after the emit still receives it (no lost wake-up), and so that the same event id sent again
-- is recognised (idempotent). expire_waits deletes them once expires_at has passed.
begin;
set local role pgflight_owner;

create table pgflight.emitted_events (
  id            bigint generated always as identity primary key,
  workspace_id  bigint not null references pgflight.workspaces (id) on delete cascade,
  event_id      text not null,
  name          text not null,
  key           text not null,
  payload       jsonb,
  emitted_at    timestamptz not null,
  expires_at    timestamptz not null,
  emitted_by    text not null,
  constraint emitted_event_id_is_unique_per_workspace unique (workspace_id, event_id)
);
-- wait_event: the newest kept event of one name and key
create index emitted_events_name_key_idx on pgflight.emitted_events (workspace_id, name, key, id);
-- expire_waits: events past their retention
create index emitted_events_expires_idx on pgflight.emitted_events (expires_at);
comment on table pgflight.emitted_events is
  'Events emitted per workspace, name and key, kept until expires_at (settings.event_retention_s after the '
  'emit). event_id: the caller''s idempotency key (generated when not given). emitted_by: the login.';

commit;
