-- Verify pgflight:functions/begin_agent_run
select 'pgflight.begin_agent_run(bigint, bigint, jsonb)'::regprocedure;
