-- Deploy pgflight:tables/costs
-- requires: tables/agent_runs
-- The cost ledger: one row per billable model call, priced from pgflight.model_prices at the time.
-- Primary key (agent_run_id, iteration); id (identity) is not indexed. Indexes: the key and run_id
-- (run_audit sums a run's spend); each further index would cost every model call.
begin;
set local role pgflight_owner;

create table pgflight.costs (
  id                     bigint generated always as identity,
  agent_run_id           bigint not null references pgflight.agent_runs (id) on delete cascade,
  iteration              integer not null,
  step_id                bigint not null,
  run_id                 bigint not null,
  workspace_id           bigint not null,
  model                  text not null,
  input_tokens           bigint not null default 0,
  output_tokens          bigint not null default 0,
  cache_creation_tokens  bigint not null default 0,
  cache_read_tokens      bigint not null default 0,
  usd                    numeric(16, 8) not null,
  stop_reason            text,
  retries                integer not null default 0,
  attempt_id             bigint,
  at                     timestamptz not null default pgflight._now(),
  constraint one_call_per_iteration primary key (agent_run_id, iteration),
  constraint tokens_are_not_negative check (
    input_tokens >= 0 and output_tokens >= 0 and cache_creation_tokens >= 0 and cache_read_tokens >= 0),
  constraint usd_is_not_negative check (usd >= 0)
);
create index costs_run_idx on pgflight.costs (run_id);
comment on table pgflight.costs is
  'One row per model call: tokens (input, output, cache_creation, cache_read), usd (USD = tokens x '
  'model_prices / 1e6), the stop_reason, the transient errors retried before it (retries), and which '
  'agent, step, run and workspace it is billed to.';

commit;
