-- Deploy pgflight:tables/flow_limits
-- Flow control the claim applies (issue 15): per workspace (in-flight cap, fair share, starts per
-- second with a burst, model tokens per minute, pause), per recipe (starts per second with a
-- burst, pause), and the global in-flight cap in settings. A workspace or recipe without a row
-- has no limit and a share of 1. Rate limits are token buckets: `tokens` is refilled at
-- starts_per_s up to burst when the claim reads it, at most once per claim.
begin;
set local role pgflight_owner;

create table pgflight.workspace_limits (
  workspace_id          bigint primary key references pgflight.workspaces (id) on delete cascade,
  max_in_flight         integer,
  share                 integer not null default 1,
  starts_per_s          double precision,
  burst                 double precision,
  tokens                double precision,
  refilled_at           timestamptz,
  model_tokens_per_min  bigint,
  paused_at             timestamptz,
  paused_by             text,
  updated_at            timestamptz not null default pgflight._now(),
  constraint max_in_flight_is_not_negative check (max_in_flight is null or max_in_flight >= 0),
  constraint share_is_positive check (share between 1 and 1000),
  constraint rate_is_positive check (starts_per_s is null or (starts_per_s > 0 and starts_per_s <= 1e6)),
  constraint burst_is_at_least_one check (burst is null or (burst >= 1 and burst <= 1e6)),
  constraint rate_has_burst check ((starts_per_s is null) = (burst is null)),
  constraint model_tokens_per_min_is_positive check (model_tokens_per_min is null or model_tokens_per_min > 0),
  constraint paused_has_actor check ((paused_at is null) = (paused_by is null))
);
comment on table pgflight.workspace_limits is
  'Flow control of a workspace. max_in_flight: leased attempts at once (null: no cap); share: weight '
  'in the fair claim (default 1); starts_per_s and burst: claim rate (token bucket, tokens/refilled_at '
  'its state); model_tokens_per_min: model tokens (input + output) per rolling minute, checked before '
  'each model call; paused_at/paused_by: not claimed while set.';

create table pgflight.recipe_limits (
  recipe        text primary key,
  starts_per_s  double precision,
  burst         double precision,
  tokens        double precision,
  refilled_at   timestamptz,
  paused_at     timestamptz,
  paused_by     text,
  updated_at    timestamptz not null default pgflight._now(),
  constraint recipe_is_not_blank check (btrim(recipe) <> '' and length(recipe) <= 200),
  constraint rate_is_positive check (starts_per_s is null or (starts_per_s > 0 and starts_per_s <= 1e6)),
  constraint burst_is_at_least_one check (burst is null or (burst >= 1 and burst <= 1e6)),
  constraint rate_has_burst check ((starts_per_s is null) = (burst is null)),
  constraint paused_has_actor check ((paused_at is null) = (paused_by is null))
);
comment on table pgflight.recipe_limits is
  'Flow control of a recipe across all workspaces: starts_per_s and burst (token bucket), paused_at/paused_by.';

alter table pgflight.settings
  add column max_in_flight integer,
  add constraint max_in_flight_is_not_negative check (max_in_flight is null or max_in_flight >= 0);
comment on column pgflight.settings.max_in_flight is
  'Global cap on leased attempts across all workspaces (null: none). While set, claims take turns.';

-- The fair claim's turn counter: each claim_batch call starts its rotation over workspaces
-- where the previous one left off. A sequence: no row every claimer would update.
create sequence pgflight.claim_turns as bigint cycle;
comment on sequence pgflight.claim_turns is 'The fair claim''s rotation counter (one value per claim_batch call).';

commit;
