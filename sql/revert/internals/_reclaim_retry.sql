-- Revert pgflight:internals/_reclaim_retry
begin;
set local role pgflight_owner;
drop function pgflight._reclaim_retry(timestamp with time zone, bigint[], jsonb[]);
commit;
