-- Revert pgflight:internals/_reclaim_end
begin;
set local role pgflight_owner;
drop function pgflight._reclaim_end(timestamp with time zone, bigint[], text[], jsonb[]);
commit;
