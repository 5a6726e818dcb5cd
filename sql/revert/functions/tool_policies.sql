-- Revert pgflight:functions/tool_policies
begin;
set local role pgflight_owner;
drop function pgflight.tool_policies(text);
commit;
