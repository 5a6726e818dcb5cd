-- Revert pgflight:internals/_budget@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight._reserve(pgflight.agent_runs, bigint, integer, numeric, timestamptz);
drop function pgflight._iteration_refusal(pgflight.agent_runs, integer);
drop function pgflight._release_reservation(bigint);
drop function pgflight._move_budget(bigint[], numeric, numeric, numeric, boolean, timestamptz, text);
drop function pgflight._raise_budget_exceeded(jsonb);
drop function pgflight._call_budget_ids(pgflight.agent_runs, timestamptz);
commit;
