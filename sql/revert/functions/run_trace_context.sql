-- Revert pgflight:functions/run_trace_context
begin;
drop function pgflight.run_trace_context(bigint);
commit;
