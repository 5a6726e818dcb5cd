-- Deploy pgflight:tables/waits
-- requires: tables/steps
-- requires: tables/workspaces
-- What a step waits for besides its children and approval gates (docs/waiting.md): a timer (until
-- due_at) or an event (workspace, name and key, with a timeout at due_at). One row per step and
-- wait key, written by the first wait_timer / wait_event with that key; the recipe runs again
-- from the top after the wake and finds the row resolved. The outcome is recorded once: the
-- first write that resolves the row (the emit, the sweep, the re-claim past due_at) wins, every
-- later one finds outcome set and changes nothing.
begin;
set local role pgflight_owner;

create table pgflight.waits (
  id                 bigint generated always as identity primary key,
  step_id            bigint not null references pgflight.steps (id) on delete cascade,
  wait_key           text not null,
  kind               text not null,
  workspace_id       bigint not null references pgflight.workspaces (id) on delete cascade,
  event_name         text,
  event_key          text,
  due_at             timestamptz,
  default_payload    jsonb,
  parked_attempt_id  bigint,
  requested_at       timestamptz not null,
  outcome            text,
  payload            jsonb,
  event_id           text,
  resolved_at        timestamptz,
  constraint waits_step_key_is_unique unique (step_id, wait_key),
  constraint kind_is_known check (kind in ('timer', 'event')),
  constraint timer_has_a_due_time check (kind <> 'timer' or due_at is not null),
  constraint event_wait_names_its_event check (kind <> 'event' or (event_name is not null and event_key is not null)),
  constraint outcome_is_known check (outcome is null or outcome in ('elapsed', 'received', 'timed_out')),
  constraint resolved_at_is_set_with_outcome check ((outcome is null) = (resolved_at is null))
);
-- emit_event: the pending waits of one name and key
create index waits_pending_event_idx on pgflight.waits (workspace_id, event_name, event_key)
  where outcome is null and kind = 'event';
-- expire_waits: pending waits by due time
create index waits_pending_due_idx on pgflight.waits (due_at) where outcome is null and due_at is not null;
comment on table pgflight.waits is
  'Timers and event waits per step and wait_key. kind: timer | event. due_at: when a timer elapses or an '
  'event wait times out (null: no timeout). outcome: elapsed | received | timed_out (null while pending), '
  'recorded once. parked_attempt_id: the attempt parked on the wait (awaiting_approval), the one a '
  'resolution wakes.';

commit;
