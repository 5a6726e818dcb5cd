-- Verify pgflight:functions/run_trace_context
select 'pgflight.run_trace_context(bigint)'::regprocedure;
