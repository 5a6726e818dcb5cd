-- Deploy pgflight:tables/events
-- requires: schema
-- The append-only transition log: every status change, with actor and reason, written in the
-- same transaction as the change. No foreign keys: the hot paths append without extra lookups.
begin;
set local role pgflight_owner;

create table pgflight.events (
  id           bigint generated always as identity primary key,
  at           timestamptz not null default pgflight._now(),
  run_id       bigint,
  step_id      bigint,
  attempt_id   bigint,
  from_status  text,
  to_status    text,
  worker_id    bigint,
  actor        text,
  reason       text not null,
  detail       jsonb
);
create index events_run_idx on pgflight.events (run_id, id);
comment on table pgflight.events is
  'Append-only log of transitions. reason names the event: queued, claimed, started, succeeded, '
  'failed, retry_scheduled, lease_expired, deadline_exceeded, dead_lettered, released, cancel_requested, '
  'cancelled, children_spawned, parent_resumed, approval_requested, approval_decided, '
  'stale_result_rejected, retried, replayed, budget_exceeded.';

commit;
