-- Revert pgflight:functions/purge_finished@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.purge_finished(double precision, integer);
commit;
