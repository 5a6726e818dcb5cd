-- Verify pgflight:functions/queue_depths
select 'pgflight.queue_depths()'::regprocedure;
