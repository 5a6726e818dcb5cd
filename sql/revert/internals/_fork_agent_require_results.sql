-- Revert pgflight:internals/_fork_agent_require_results
begin;
set local role pgflight_owner;
drop function pgflight._fork_agent_require_results(bigint, integer, jsonb);
commit;
