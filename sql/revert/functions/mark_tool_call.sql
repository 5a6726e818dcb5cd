-- Revert pgflight:functions/mark_tool_call
begin;
set local role pgflight_owner;
drop function pgflight.mark_tool_call(bigint, bigint, bigint, text);
commit;
