-- Revert pgflight:functions/purge_finished
begin;
set local role pgflight_owner;
drop function pgflight.purge_finished(double precision, integer);
commit;
