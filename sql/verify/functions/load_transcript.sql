-- Verify pgflight:functions/load_transcript
select 'pgflight.load_transcript(bigint, bigint, bigint)'::regprocedure;
select 'pgflight.agent_run_of(bigint)'::regprocedure;
select 'pgflight.agent_runs_by_status(text, bigint, integer)'::regprocedure;
select 'pgflight.agent_transcript(bigint)'::regprocedure;
