-- Revert pgflight:functions/complete_tool_call
begin;
set local role pgflight_owner;
drop function pgflight.complete_tool_call(bigint, bigint, bigint, text, jsonb);
commit;
