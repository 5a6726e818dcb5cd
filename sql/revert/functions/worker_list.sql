-- Revert pgflight:functions/worker_list
begin;
drop function pgflight.worker_list(integer);
commit;
