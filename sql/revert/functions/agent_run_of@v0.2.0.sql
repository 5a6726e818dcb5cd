-- Revert pgflight:functions/agent_run_of@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.agent_run_of(bigint);
commit;
