-- Verify pgflight:functions/sweeps
select 'pgflight.reclaim_expired(integer)'::regprocedure;
select 'pgflight.purge_finished(double precision, integer)'::regprocedure;
select 'pgflight.run_sweeps()'::regprocedure;
