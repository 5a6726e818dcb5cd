-- Revert pgflight:functions/drop_tool_policy
begin;
set local role pgflight_owner;
drop function pgflight.drop_tool_policy(text, text);
commit;
