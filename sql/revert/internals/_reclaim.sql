-- Revert pgflight:internals/_reclaim
begin;
set local role pgflight_owner;
drop function pgflight._reclaim(timestamp with time zone, integer);
commit;
