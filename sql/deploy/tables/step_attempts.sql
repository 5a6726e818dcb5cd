-- Deploy pgflight:tables/step_attempts
-- requires: tables/steps tables/workers
-- One try of a step: who holds it, the lease, the fencing token, the status of this try.
begin;
set local role pgflight_owner;

create sequence pgflight.fencing_tokens as bigint;
comment on sequence pgflight.fencing_tokens is
  'Fencing tokens: a fresh, strictly increasing value at every claim, across all attempts.';

create table pgflight.step_attempts (
  id                bigint generated always as identity primary key,
  step_id           bigint not null references pgflight.steps (id) on delete cascade,
  run_id            bigint not null,
  attempt_no        integer not null,
  recipe            text not null,
  priority          integer not null default 0,
  status            text not null default 'queued',
  available_after   timestamptz not null,
  worker_id         bigint,
  fencing_token     bigint,
  lease_s           double precision,
  claimed_at        timestamptz,
  started_at        timestamptz,
  lease_expires_at  timestamptz,
  deadline_at       timestamptz,
  finished_at       timestamptz,
  result            jsonb,
  error             jsonb,
  reason            text,
  created_at        timestamptz not null default pgflight._now(),
  constraint status_is_known check (status in (
    'queued', 'claimed', 'running', 'cancel_requested', 'awaiting_children', 'awaiting_approval',
    'succeeded', 'failed', 'lease_expired', 'timed_out', 'dead_letter', 'cancelled')),
  constraint attempt_no_is_unique_per_step unique (step_id, attempt_no),
  constraint leased_attempt_has_owner check (
    status not in ('claimed', 'running', 'cancel_requested')
    or (worker_id is not null and fencing_token is not null and lease_expires_at is not null)),
  constraint finished_at_is_after_claimed_at check (finished_at is null or claimed_at is null or finished_at >= claimed_at)
);

-- claim reads only ready rows, in claim order.
create index step_attempts_ready_idx on pgflight.step_attempts (priority desc, available_after, id)
  where status = 'queued';
-- reclaim reads only leased rows, by lease expiry; the deadline sweep by deadline.
create index step_attempts_expiring_idx on pgflight.step_attempts (lease_expires_at)
  where status in ('claimed', 'running', 'cancel_requested');
create index step_attempts_deadline_idx on pgflight.step_attempts (deadline_at)
  where status in ('claimed', 'running') and deadline_at is not null;
-- parked parents and gates, for wake_parents and expire_approvals.
create index step_attempts_parked_idx on pgflight.step_attempts (status, step_id)
  where status in ('awaiting_children', 'awaiting_approval');
-- invariant 1 as a constraint: a step has at most one live attempt.
create unique index step_attempts_one_live_per_step_idx on pgflight.step_attempts (step_id)
  where status in ('queued', 'claimed', 'running', 'cancel_requested', 'awaiting_children', 'awaiting_approval');

comment on table pgflight.step_attempts is
  'Attempts (tries) of steps. Live statuses: queued, claimed, running, cancel_requested, '
  'awaiting_children, awaiting_approval. An attempt ends failed, lease_expired or timed_out (another '
  'attempt follows), or succeeded, dead_letter or cancelled (the step is terminal). Claim metadata '
  '(worker_id, claimed_at, lease_expires_at, fencing_token) is never cleared. lease_s in seconds.';

commit;
