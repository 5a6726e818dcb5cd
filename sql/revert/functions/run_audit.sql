-- Revert pgflight:functions/run_audit
begin;
set local role pgflight_owner;
drop function pgflight.run_audit(bigint);
commit;
