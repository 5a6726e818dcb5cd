-- Revert pgflight:functions/fork_agent
begin;
set local role pgflight_owner;
drop function pgflight.fork_agent(bigint, integer, jsonb, text);
drop function pgflight._fork_agent_copy_iterations(bigint, integer, jsonb, bigint, bigint, bigint, bigint, timestamptz);
drop function pgflight._fork_agent_budgets(bigint, bigint, bigint, numeric, numeric, double precision, timestamptz);
drop function pgflight._fork_agent_require_results(bigint, integer, jsonb);
drop function pgflight._fork_agent_patch(jsonb, bigint);
commit;
