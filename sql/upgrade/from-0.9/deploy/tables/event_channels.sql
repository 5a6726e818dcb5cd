-- Deploy pgflight:tables/event_channels
-- requires: tables/workspaces
-- One row per workspace, event name and key that a wait or an emit has touched: both lock it
-- (insert-or-lock) before they look at the other side, so a wait that registers while an event is
-- emitted either sees the event or is seen by the emit, never neither (docs/locking.md). No data
-- but the names; expire_waits deletes a row once no pending wait and no kept event names it.
begin;
set local role pgflight_owner;

create table pgflight.event_channels (
  workspace_id  bigint not null references pgflight.workspaces (id) on delete cascade,
  name          text not null,
  key           text not null,
  touched_at    timestamptz not null,
  constraint event_channels_pkey primary key (workspace_id, name, key)
);
create index event_channels_touched_idx on pgflight.event_channels (touched_at);
comment on table pgflight.event_channels is
  'Lock rows: one per workspace, event name and key; wait_event and emit_event lock it first, so no wake-up is lost.';

commit;
