-- Revert pgflight:tables/agent_runs
begin;
set local role pgflight_owner;
drop table pgflight.agent_runs;
commit;
