-- Revert pgflight:tables/agent_ledger_outcomes
begin;
set local role pgflight_owner;

-- block types the older check does not know are kept under its nearest name (their content as it came)
update pgflight.traces set block_type = 'text'
 where block_type <> all ('{thinking,text,tool_use,tool_result,api_error}'::text[]);
alter table pgflight.traces
  drop constraint block_type_is_a_name,
  add constraint block_type_is_known
    check (block_type = any ('{thinking,text,tool_use,tool_result,api_error}'::text[]));
alter table pgflight.model_prices
  drop constraint server_tool_prices_are_not_negative,
  drop column web_search_usd_per_request,
  drop column cache_write_1h_usd_per_mtok;
alter table pgflight.costs
  drop constraint unknown_outcome_is_lease_lost,
  drop constraint server_tool_counts_are_not_negative,
  drop column budget_ids,
  drop column web_search_requests,
  drop column cache_creation_1h_tokens,
  drop column unknown_outcome;
alter table pgflight.agent_runs drop column reserved_call_out;

commit;
