-- Revert pgflight:internals/_fork_agent_copy_iterations
begin;
set local role pgflight_owner;
drop function pgflight._fork_agent_copy_iterations(bigint, integer, jsonb, bigint, bigint, bigint, bigint, timestamp with time zone);
commit;
