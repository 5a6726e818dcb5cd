-- Verify pgflight:functions/_agent
select 'pgflight._agent_fence(bigint, bigint, bigint, text)'::regprocedure;
select 'pgflight._price_usd(text, jsonb)'::regprocedure;
select 'pgflight._call_budget_ids(pgflight.agent_runs, timestamptz)'::regprocedure;
select 'pgflight._raise_budget_exceeded(jsonb)'::regprocedure;
select 'pgflight._move_budget(bigint[], numeric, numeric, numeric, boolean, timestamptz, text)'::regprocedure;
select 'pgflight._release_reservation(bigint)'::regprocedure;
select 'pgflight._iteration_refusal(pgflight.agent_runs, integer)'::regprocedure;
select 'pgflight._reserve(pgflight.agent_runs, bigint, integer, numeric, timestamptz)'::regprocedure;
select 'pgflight._store_tool_results(bigint, bigint, jsonb, timestamptz)'::regprocedure;
