-- Revert pgflight:functions/agent_run_of
begin;
set local role pgflight_owner;
drop function pgflight.agent_run_of(bigint);
commit;
