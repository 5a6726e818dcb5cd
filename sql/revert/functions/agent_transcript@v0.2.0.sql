-- Revert pgflight:functions/agent_transcript@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.agent_transcript(bigint);
commit;
