-- Deploy pgflight:tables/traces
-- requires: tables/agent_runs
-- The flight recorder: one row per block. Iteration 0 holds the task (the first user message).
-- In iteration n >= 1: seq 0..k-1 are the model's response blocks (role assistant, in order);
-- seq 1000 + j is the tool_result answering the tool_use at seq j (role user); seq >= 2000 are
-- transient API errors met while making that iteration's call (role system, block api_error).
-- The key (agent_run_id, iteration, seq) makes a repeated write of the same block a no-op; it is
-- the primary key. id (identity, unique by construction) names a row in API results and is not
-- indexed: no query looks a row up by it, and every index costs each of the ~4 rows written per
-- agent iteration. status is not indexed either, so completing an in-flight result can be a HOT
-- update.
begin;
set local role pgflight_owner;

create table pgflight.traces (
  id            bigint generated always as identity,
  agent_run_id  bigint not null references pgflight.agent_runs (id) on delete cascade,
  iteration     integer not null,
  seq           integer not null,
  role          text not null,
  block_type    text not null,
  tool_use_id   text,
  tool_name     text,
  content       jsonb,
  status        text not null default 'completed',
  tokens        integer,
  attempt_id    bigint,
  created_at    timestamptz not null default pgflight._now(),
  updated_at    timestamptz not null default pgflight._now(),
  constraint block_is_unique primary key (agent_run_id, iteration, seq),
  constraint role_is_known check (role in ('user', 'assistant', 'system')),
  constraint block_type_is_known check (block_type in ('thinking', 'text', 'tool_use', 'tool_result', 'api_error')),
  constraint status_is_known check (status in ('completed', 'in_flight', 'interrupted')),
  constraint tool_blocks_name_their_call check (block_type not in ('tool_use', 'tool_result') or tool_use_id is not null),
  constraint iteration_is_not_negative check (iteration >= 0 and seq >= 0)
);
-- one result per tool call; mark/complete find the call by its id. (load_transcript finds the
-- calls left in flight through the primary key: one agent's rows, once per attempt.)
create unique index traces_tool_call_idx on pgflight.traces (agent_run_id, tool_use_id, block_type)
  where tool_use_id is not null;
comment on table pgflight.traces is
  'Flight recorder, one row per block: role user|assistant|system, block_type thinking|text|tool_use|'
  'tool_result|api_error, content: the block as sent to or received from the Messages API, status '
  'completed|in_flight|interrupted (tool results), tokens: estimated tokens of the block (exact usage '
  'per call is in pgflight.costs), attempt_id: the attempt that wrote it.';

commit;
