-- Verify pgflight:tables/agent_runs
select id, step_id, run_id, workspace_id, model, system_prompt_hash, max_iterations, max_tool_calls,
       iterations, tool_calls, input_tokens, output_tokens, usd, budget_ids, reserved_usd
  from pgflight.agent_runs where false;
