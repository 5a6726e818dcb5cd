-- Revert pgflight:functions/reclaim_expired
begin;
set local role pgflight_owner;
drop function pgflight.reclaim_expired(integer);
commit;
