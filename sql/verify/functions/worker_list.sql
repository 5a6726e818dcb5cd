-- Verify pgflight:functions/worker_list
select 'pgflight.worker_list(integer)'::regprocedure;
