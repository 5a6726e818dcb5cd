-- Revert pgflight:internals/_complete_refusing
begin;
set local role pgflight_owner;
drop function pgflight._complete_refusing(bigint[], bigint[], jsonb[], jsonb[]);
commit;
