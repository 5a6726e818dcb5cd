-- Verify pgflight:tables/agent_ledger_outcomes
select reserved_call_out from pgflight.agent_runs where false;
select unknown_outcome, budget_ids, cache_creation_1h_tokens, web_search_requests from pgflight.costs where false;
select cache_write_1h_usd_per_mtok, web_search_usd_per_request from pgflight.model_prices where false;
