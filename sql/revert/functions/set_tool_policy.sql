-- Revert pgflight:functions/set_tool_policy
begin;
set local role pgflight_owner;
drop function pgflight.set_tool_policy(text, text, jsonb);
commit;
