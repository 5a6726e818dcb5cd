-- Revert pgflight:tables/agent_write_checks
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
  drop constraint usd_is_not_negative,
  add constraint tokens_are_not_negative check (
    input_tokens >= 0 and output_tokens >= 0 and cache_creation_tokens >= 0 and cache_read_tokens >= 0),
  add constraint usd_is_not_negative check (usd >= 0);

alter table pgflight.agent_runs
  drop constraint totals_are_not_negative,
  drop constraint reservation_is_whole,
  add constraint totals_are_not_negative check (iterations >= 0 and tool_calls >= 0 and usd >= 0),
  add constraint reservation_is_whole
    check (case when reserved_iteration is null then reserved_usd = 0 and reserved_budget_ids is null
                else reserved_attempt_id is not null end);

alter table pgflight.budgets
  drop constraint scope_is_known,
  drop constraint scope_names_its_key,
  drop constraint amounts_are_not_negative,
  drop constraint max_wall_is_positive,
  add constraint scope_is_known check (scope in ('run', 'step', 'workspace_day')),
  add constraint scope_names_its_key check (case scope
    when 'run' then run_id is not null and step_id is null and day is null
    when 'step' then run_id is not null and step_id is not null and day is null
    else run_id is null and step_id is null and day is not null end),
  add constraint amounts_are_not_negative check (spent_usd >= 0 and reserved_usd >= 0 and (limit_usd is null or limit_usd >= 0)),
  add constraint max_wall_is_positive check (max_wall_s is null or max_wall_s > 0);

commit;
