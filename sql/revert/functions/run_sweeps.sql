-- Revert pgflight:functions/run_sweeps
begin;
set local role pgflight_owner;
drop function pgflight.run_sweeps();
commit;
