-- Revert pgflight:internals/_reclaim_picked@v1.0.0
begin;
set local role pgflight_owner;
drop function pgflight._reclaim_picked(timestamp with time zone, bigint[]);
commit;
