-- Revert pgflight:internals/_call_budget_ids
begin;
set local role pgflight_owner;
drop function pgflight._call_budget_ids(pgflight.agent_runs, timestamp with time zone);
commit;
