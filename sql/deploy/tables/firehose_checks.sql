-- Deploy pgflight:tables/firehose_checks
-- requires: tables/firehose_by_agent_run tables/agent_runs_hot
-- Issue 18 (agent server time): PostgreSQL 15 reads a table's CHECK constraints from their stored
-- node text, constant-folds and compiles them anew for every statement that writes the table (no
-- cache across statements). An agent iteration writes traces twice, costs and agent_runs once: a
-- fifth of its server time went to that (measured with the checks dropped: 0.73x). The rules are
-- the same, written so the stored trees are smaller: a list of names as one constant text[]
-- (`= any ('{..}')`; `in (..)` is stored as an ARRAY[..] of constants, built again by the planner
-- at every statement) and several not-null columns compared at once with least() (least skips
-- nulls; these columns are not null). Each constraint keeps its name; adding it checks every
-- existing row (the rules are unchanged, so none fails).
begin;
set local role pgflight_owner;

alter table pgflight.traces
  drop constraint role_is_known,
  drop constraint block_type_is_known,
  drop constraint status_is_known,
  drop constraint tool_blocks_name_their_call,
  drop constraint iteration_is_not_negative,
  add constraint role_is_known check (role = any ('{user,assistant,system}'::text[])),
  add constraint block_type_is_known
    check (block_type = any ('{thinking,text,tool_use,tool_result,api_error}'::text[])),
  add constraint status_is_known check (status = any ('{completed,in_flight,interrupted}'::text[])),
  add constraint tool_blocks_name_their_call
    check (block_type <> all ('{tool_use,tool_result}'::text[]) or tool_use_id is not null),
  add constraint iteration_is_not_negative check (least(iteration, seq) >= 0);

alter table pgflight.costs
  drop constraint tokens_are_not_negative,
  add constraint tokens_are_not_negative
    check (least(input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens) >= 0);

alter table pgflight.agent_runs
  drop constraint totals_are_not_negative,
  add constraint totals_are_not_negative check (least(iterations, tool_calls) >= 0 and usd >= 0);

commit;
