-- Revert pgflight:functions/complete_tool_calls@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.complete_tool_calls(bigint, bigint, bigint, jsonb, integer, numeric);
commit;
