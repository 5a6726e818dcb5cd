-- Revert pgflight:tables/firehose_checks
begin;
set local role pgflight_owner;

alter table pgflight.traces
  drop constraint role_is_known,
  drop constraint block_type_is_known,
  drop constraint status_is_known,
  drop constraint tool_blocks_name_their_call,
  drop constraint iteration_is_not_negative,
  add constraint role_is_known check (role in ('user', 'assistant', 'system')),
  add constraint block_type_is_known check (block_type in ('thinking', 'text', 'tool_use', 'tool_result', 'api_error')),
  add constraint status_is_known check (status in ('completed', 'in_flight', 'interrupted')),
  add constraint tool_blocks_name_their_call check (block_type not in ('tool_use', 'tool_result') or tool_use_id is not null),
  add constraint iteration_is_not_negative check (iteration >= 0 and seq >= 0);

alter table pgflight.costs
  drop constraint tokens_are_not_negative,
  add constraint tokens_are_not_negative check (
    input_tokens >= 0 and output_tokens >= 0 and cache_creation_tokens >= 0 and cache_read_tokens >= 0);

alter table pgflight.agent_runs
  drop constraint totals_are_not_negative,
  add constraint totals_are_not_negative check (iterations >= 0 and tool_calls >= 0 and usd >= 0);

commit;
