-- Revert pgflight:functions/deregister_worker
begin;
set local role pgflight_owner;
drop function pgflight.deregister_worker(bigint);
commit;
