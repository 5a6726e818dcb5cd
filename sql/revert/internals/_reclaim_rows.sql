-- Revert pgflight:internals/_reclaim_rows
begin;
set local role pgflight_owner;
drop function pgflight._reclaim_rows(timestamp with time zone, bigint[], jsonb[]);
commit;
