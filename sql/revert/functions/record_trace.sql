-- Revert pgflight:functions/record_trace
begin;
drop function pgflight.complete_tool_calls(bigint, bigint, bigint, jsonb, integer, numeric);
drop function pgflight.complete_tool_call(bigint, bigint, bigint, text, jsonb);
drop function pgflight.mark_tool_call(bigint, bigint, bigint, text);
drop function pgflight.record_trace(bigint, bigint, bigint, integer, text, text, jsonb, jsonb);
commit;
