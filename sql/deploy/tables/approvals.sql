-- Deploy pgflight:tables/approvals
-- requires: tables/steps
-- Approval gates. A decision may arrive before the step reaches its gate: it is kept and used.
begin;
set local role pgflight_owner;

create table pgflight.approvals (
  id                bigint generated always as identity primary key,
  step_id           bigint not null references pgflight.steps (id) on delete cascade,
  gate_key          text not null,
  request           jsonb,
  decision          text,
  actor             text,
  note              text,
  default_decision  text not null default 'reject',
  requested_at      timestamptz,
  expires_at        timestamptz,
  decided_at        timestamptz,
  constraint gate_key_is_unique_per_step unique (step_id, gate_key),
  constraint decision_is_known check (decision is null or decision in ('approve', 'reject')),
  constraint default_decision_is_known check (default_decision in ('approve', 'reject')),
  constraint decided_at_is_set_with_decision check ((decision is null) = (decided_at is null))
);
create index approvals_expiring_idx on pgflight.approvals (expires_at) where decision is null;
comment on table pgflight.approvals is
  'Approval gates per step and gate_key. decision: approve | reject (null while pending). '
  'expires_at: when expire_approvals applies default_decision.';

commit;
