-- Revert pgflight:functions/begin_agent_run
begin;
set local role pgflight_owner;
drop function pgflight.begin_agent_run(bigint, bigint, jsonb);
commit;
