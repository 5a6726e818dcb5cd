-- Revert pgflight:functions/load_transcript
begin;
drop function pgflight.agent_transcript(bigint);
drop function pgflight.agent_runs_by_status(text, bigint, integer);
drop function pgflight.agent_run_of(bigint);
drop function pgflight.load_transcript(bigint, bigint, bigint);
commit;
