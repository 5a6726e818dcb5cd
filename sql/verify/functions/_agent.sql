-- Verify pgflight:functions/_agent
select 'pgflight._agent_fence(bigint, bigint, bigint, text)'::regprocedure;
select 'pgflight._price_usd(text, jsonb)'::regprocedure;
select 'pgflight._call_budget_ids(pgflight.agent_runs, timestamptz)'::regprocedure;
select 'pgflight._move_budget(bigint[], numeric, numeric, numeric, boolean, timestamptz, text)'::regprocedure;
select 'pgflight._release_reservation(bigint)'::regprocedure;
select 'pgflight._check_iterations(pgflight.agent_runs, integer)'::regprocedure;
