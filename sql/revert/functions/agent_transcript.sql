-- Revert pgflight:functions/agent_transcript
begin;
set local role pgflight_owner;
drop function pgflight.agent_transcript(bigint);
commit;
