-- Revert pgflight:functions/reclaim_expired@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.reclaim_expired(integer);
commit;
