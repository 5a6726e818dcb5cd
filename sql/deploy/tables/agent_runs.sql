-- Deploy pgflight:tables/agent_runs
-- requires: tables/steps tables/step_attempts
-- One agent: the identity of an agent step across all its attempts, its model and caps, running
-- totals, the tree budgets that bind it, and the USD reservation of the model call in flight.
begin;
set local role pgflight_owner;

create table pgflight.agent_runs (
  id                     bigint generated always as identity primary key,
  step_id                bigint not null references pgflight.steps (id) on delete cascade,
  run_id                 bigint not null references pgflight.runs (id) on delete cascade,
  workspace_id           bigint not null,
  model                  text not null,
  system_prompt          text not null default '',
  system_prompt_hash     text not null,
  max_iterations         integer not null default 25,
  max_tool_calls         integer not null default 50,
  iterations             integer not null default 0,
  tool_calls             integer not null default 0,
  input_tokens           bigint not null default 0,
  output_tokens          bigint not null default 0,
  cache_creation_tokens  bigint not null default 0,
  cache_read_tokens      bigint not null default 0,
  usd                    numeric(16, 8) not null default 0,
  budget_ids             bigint[] not null default '{}',
  reserved_usd           numeric(16, 8) not null default 0,
  reserved_attempt_id    bigint,
  reserved_iteration     integer,
  reserved_budget_ids    bigint[],
  options                jsonb not null default '{}',
  created_at             timestamptz not null default pgflight._now(),
  updated_at             timestamptz not null default pgflight._now(),
  constraint agent_run_is_unique_per_step unique (step_id),
  constraint caps_are_positive check (max_iterations > 0 and max_tool_calls >= 0),
  constraint totals_are_not_negative check (iterations >= 0 and tool_calls >= 0 and usd >= 0),
  constraint reservation_is_whole check ((reserved_attempt_id is null) = (reserved_usd = 0 and reserved_iteration is null))
);
create index agent_runs_run_idx on pgflight.agent_runs (run_id);
create index agent_runs_reserved_idx on pgflight.agent_runs (reserved_attempt_id) where reserved_attempt_id is not null;
comment on table pgflight.agent_runs is
  'One per agent step, across its attempts. max_iterations / max_tool_calls: per-agent caps (model '
  'calls, tool calls). Totals: iterations, tool_calls, tokens, usd (USD). budget_ids: the tree budgets '
  '(pgflight.budgets: the run, every ancestor agent with a cap, this agent) that bind its spend. '
  'reserved_*: the USD reserved for the model call in flight (attempt, iteration, budgets), replaced '
  'by the actual cost when record_model_call settles it, released by enforce_budgets when the attempt lapsed.';

commit;
