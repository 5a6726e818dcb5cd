-- Verify pgflight:functions/record_trace
select 'pgflight.record_trace(bigint, bigint, bigint, integer, text, text, jsonb, jsonb)'::regprocedure;
select 'pgflight.mark_tool_call(bigint, bigint, bigint, text)'::regprocedure;
select 'pgflight.complete_tool_call(bigint, bigint, bigint, text, jsonb)'::regprocedure;
select 'pgflight.complete_tool_calls(bigint, bigint, bigint, jsonb, integer, numeric)'::regprocedure;
