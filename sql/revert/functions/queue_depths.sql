-- Revert pgflight:functions/queue_depths
begin;
set local role pgflight_owner;
drop function pgflight.queue_depths();
commit;
