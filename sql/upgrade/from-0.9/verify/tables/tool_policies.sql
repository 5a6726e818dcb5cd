-- Verify pgflight:tables/tool_policies
select workspace_id, tool_name, action, condition, over_usd, updated_at, updated_by
  from pgflight.tool_policies where false;
