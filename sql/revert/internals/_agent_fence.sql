-- Revert pgflight:internals/_agent_fence
begin;
set local role pgflight_owner;
drop function pgflight._agent_fence(bigint, bigint, bigint, text);
commit;
