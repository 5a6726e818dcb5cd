-- Verify pgflight:functions/register_worker
select 'pgflight.register_worker(text, jsonb)'::regprocedure;
select 'pgflight.deregister_worker(bigint)'::regprocedure;
