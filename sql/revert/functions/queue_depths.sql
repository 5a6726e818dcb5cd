-- Revert pgflight:functions/queue_depths
begin;
drop function pgflight.queue_depths();
commit;
