-- Revert pgflight:functions/run_audit@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.run_audit(bigint);
commit;
