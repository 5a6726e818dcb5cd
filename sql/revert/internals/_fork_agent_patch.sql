-- Revert pgflight:internals/_fork_agent_patch
begin;
set local role pgflight_owner;
drop function pgflight._fork_agent_patch(jsonb, bigint);
commit;
