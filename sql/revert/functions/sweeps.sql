-- Revert pgflight:functions/sweeps
begin;
drop function pgflight.run_sweeps();
drop function pgflight.purge_finished(double precision, integer);
drop function pgflight.reclaim_expired(integer);
commit;
