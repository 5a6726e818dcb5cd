-- Verify pgflight:tables/traces
select id, agent_run_id, iteration, seq, role, block_type, tool_use_id, tool_name, content, status, tokens, attempt_id
  from pgflight.traces where false;
