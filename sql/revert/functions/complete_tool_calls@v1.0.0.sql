-- Revert pgflight:functions/complete_tool_calls@v1.0.0
begin;
set local role pgflight_owner;
drop function pgflight.complete_tool_calls(bigint, bigint, bigint, jsonb, integer, numeric);
commit;
