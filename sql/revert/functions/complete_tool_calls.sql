-- Revert pgflight:functions/complete_tool_calls
begin;
set local role pgflight_owner;
drop function pgflight.complete_tool_calls(bigint, bigint, bigint, jsonb, integer, numeric);
commit;
