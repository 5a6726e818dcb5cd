-- Verify pgflight:tables/costs
select id, agent_run_id, iteration, step_id, run_id, workspace_id, model, input_tokens, output_tokens,
       cache_creation_tokens, cache_read_tokens, usd, at
  from pgflight.costs where false;
