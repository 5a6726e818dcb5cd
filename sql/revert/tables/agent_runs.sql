-- Revert pgflight:tables/agent_runs
begin;
drop table pgflight.agent_runs;
commit;
