-- Revert pgflight:functions/run_audit
begin;
drop function pgflight.run_audit(bigint);
commit;
