-- Revert pgflight:functions/begin_agent_run
begin;
drop function pgflight.begin_agent_run(bigint, bigint, jsonb);
commit;
