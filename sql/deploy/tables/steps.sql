-- Deploy pgflight:tables/steps
-- requires: tables/runs
-- A step's identity, stored once: run, parent, key among its siblings, recipe, input, policy.
-- Retries append step_attempts rows and never copy the input. The step's current status is the
-- status of its latest attempt (view pgflight.step_status), never a copy kept here.
begin;
set local role pgflight_owner;

create table pgflight.steps (
  id                bigint generated always as identity primary key,
  run_id            bigint not null references pgflight.runs (id) on delete cascade,
  parent_id         bigint references pgflight.steps (id) on delete cascade,
  depth             integer not null default 0,
  step_key          text not null,
  recipe            text not null,
  input             jsonb not null,
  priority          integer not null default 0,
  max_attempts      integer not null,
  backoff           jsonb not null default '{}',
  lease_s           double precision,
  max_runtime_s     double precision,
  failed_attempts   integer not null default 0,
  last_attempt_no   integer not null default 1,
  children_pending  integer not null default 0,
  fail_fast         boolean not null default false,
  created_at        timestamptz not null default pgflight._now(),
  constraint step_key_is_unique_under_parent unique (parent_id, step_key),
  constraint max_attempts_is_positive check (max_attempts > 0),
  constraint failed_attempts_is_not_negative check (failed_attempts >= 0),
  constraint lease_is_positive check (lease_s is null or lease_s > 0),
  constraint max_runtime_is_positive check (max_runtime_s is null or max_runtime_s > 0),
  constraint root_has_depth_zero check ((parent_id is null) = (depth = 0))
);
create index steps_run_idx on pgflight.steps (run_id);
comment on table pgflight.steps is
  'Step identity. failed_attempts counts attempts that ended failed, lease_expired or timed_out: '
  'at max_attempts the step is dead-lettered. children_pending counts children not yet terminal '
  'while the step waits in awaiting_children: the last child to finish wakes the parent (O(1)). '
  'lease_s / max_runtime_s (seconds) override the claim lease and bound the runtime of one attempt.';

commit;
