-- Revert pgflight:functions/run_trace_context
begin;
set local role pgflight_owner;
drop function pgflight.run_trace_context(bigint);
commit;
