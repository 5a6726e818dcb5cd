-- Revert pgflight:internals/_complete_many
begin;
set local role pgflight_owner;
drop function pgflight._complete_many(bigint[], bigint[], jsonb[], timestamp with time zone);
commit;
