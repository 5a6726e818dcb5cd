-- Revert pgflight:functions/deregister_worker@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.deregister_worker(bigint);
commit;
