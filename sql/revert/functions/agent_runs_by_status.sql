-- Revert pgflight:functions/agent_runs_by_status
begin;
set local role pgflight_owner;
drop function pgflight.agent_runs_by_status(text, bigint, integer);
commit;
