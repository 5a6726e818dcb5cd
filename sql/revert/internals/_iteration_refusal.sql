-- Revert pgflight:internals/_iteration_refusal
begin;
set local role pgflight_owner;
drop function pgflight._iteration_refusal(pgflight.agent_runs, integer);
commit;
