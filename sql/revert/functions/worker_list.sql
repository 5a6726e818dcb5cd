-- Revert pgflight:functions/worker_list
begin;
set local role pgflight_owner;
drop function pgflight.worker_list(integer);
commit;
