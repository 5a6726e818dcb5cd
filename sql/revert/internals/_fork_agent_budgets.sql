-- Revert pgflight:internals/_fork_agent_budgets
begin;
set local role pgflight_owner;
drop function pgflight._fork_agent_budgets(bigint, bigint, bigint, numeric, numeric, double precision, timestamp with time zone);
commit;
