-- Verify pgflight:functions/complete_step
select 'pgflight._complete_many(bigint[], bigint[], jsonb[], timestamptz)'::regprocedure;
select 'pgflight.complete_step(bigint, bigint, jsonb)'::regprocedure;
select 'pgflight.complete_batch(bigint[], bigint[], jsonb[])'::regprocedure;
