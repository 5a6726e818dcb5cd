-- Revert pgflight:functions/mark_tool_call@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.mark_tool_call(bigint, bigint, bigint, text);
commit;
