-- Deploy pgflight:tables/agent_write_checks
-- requires: tables/firehose_by_agent_run tables/agent_runs_hot tables/budgets
-- Issue 18 (agent server time): PostgreSQL 15 reads a table's CHECK constraints from their stored
-- node text, constant-folds and compiles them anew for every statement that writes the table (no
-- cache across statements). An agent iteration writes traces twice, costs, agent_runs and three
-- budgets rows once each; with every check of the four tables dropped its server time was 0.73x.
-- The rules are the same, written so that the stored trees are smaller and need no folding:
-- - a list of names is one constant text[] (`= any ('{..}')`); `in (..)` is stored as an
--   ARRAY[..] of constants that the planner builds again at every statement (an executor of its
--   own for each);
-- - a numeric bound is a numeric literal (0.0, '0'::double precision); `usd >= 0` is stored as a
--   call of numeric(integer), evaluated the same way at every statement;
-- - several not-null columns are compared at once with least(), which skips nulls: only where
--   those columns are not null, or where a null passed before too (limit_usd is null or ...).
-- - budgets.scope_names_its_key (case scope when 'run' ... when 'step' ... else ...) compares each
--   key's presence with the scope instead: run_id and no day for 'run' and 'step', step_id for
--   'step' only, day and neither id for any other scope (scope is not null).
-- Each constraint keeps its name; adding it checks every existing row (the rules are unchanged, so
-- none fails).
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
  drop constraint usd_is_not_negative,
  add constraint tokens_are_not_negative
    check (least(input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens) >= 0),
  add constraint usd_is_not_negative check (usd >= 0.0);

alter table pgflight.agent_runs
  drop constraint totals_are_not_negative,
  drop constraint reservation_is_whole,
  add constraint totals_are_not_negative check (least(iterations, tool_calls) >= 0 and usd >= 0.0),
  add constraint reservation_is_whole
    check (case when reserved_iteration is null then reserved_usd = 0.0 and reserved_budget_ids is null
                else reserved_attempt_id is not null end);

alter table pgflight.budgets
  drop constraint scope_is_known,
  drop constraint scope_names_its_key,
  drop constraint amounts_are_not_negative,
  drop constraint max_wall_is_positive,
  add constraint scope_is_known check (scope = any ('{run,step,workspace_day}'::text[])),
  add constraint scope_names_its_key
    check ((run_id is not null) = (scope = any ('{run,step}'::text[]))
           and (day is null) = (scope = any ('{run,step}'::text[]))
           and (step_id is not null) = (scope = 'step')),
  add constraint amounts_are_not_negative check (least(spent_usd, reserved_usd, limit_usd) >= 0.0),
  add constraint max_wall_is_positive check (max_wall_s > '0'::double precision);

commit;
