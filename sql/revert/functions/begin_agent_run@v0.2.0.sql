-- Revert pgflight:functions/begin_agent_run@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.begin_agent_run(bigint, bigint, jsonb);
commit;
