-- Verify pgflight:tables/step_attempts_flow
select workspace_id, concurrency_key, concurrency_limit from pgflight.step_attempts where false;
select concurrency_key, concurrency_limit from pgflight.steps where false;
