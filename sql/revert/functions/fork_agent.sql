-- Revert pgflight:functions/fork_agent
begin;
set local role pgflight_owner;
drop function pgflight.fork_agent(bigint, integer, jsonb, text);
commit;
