-- Revert pgflight:functions/complete_tool_call@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.complete_tool_call(bigint, bigint, bigint, text, jsonb);
commit;
