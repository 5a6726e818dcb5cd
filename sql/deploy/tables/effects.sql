-- Deploy pgflight:tables/effects
-- requires: tables/steps
-- Receipts of external side effects (an HTTP charge, an e-mail, a file upload), one per
-- idempotency key per step, written the instant the effect succeeded. A retry of the step (any
-- later attempt, on any worker) finds the receipt and does not act again.
-- Scope of a key: the step (not the attempt, which changes on every retry, and not the run, so two
-- sibling steps may use the same key for different effects). A replayed step keeps its receipts:
-- what happened in the world stays happened.
begin;
set local role pgflight_owner;
create table pgflight.effects (
  id            bigint generated always as identity primary key,
  step_id       bigint not null references pgflight.steps (id) on delete cascade,
  effect_key    text not null,
  result        jsonb,
  attempt_id    bigint not null,
  recorded_at   timestamptz not null default pgflight._now(),
  constraint effect_key_is_unique_per_step unique (step_id, effect_key),
  constraint effect_key_is_not_blank check (btrim(effect_key) <> '' and length(effect_key) <= 500)
);
comment on table pgflight.effects is
  'Receipts of external side effects: one per (step_id, effect_key), with the effect''s JSON result and '
  'the attempt that performed it. The first receipt recorded for a key wins.';
commit;
