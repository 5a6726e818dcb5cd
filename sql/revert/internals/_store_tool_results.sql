-- Revert pgflight:internals/_store_tool_results
begin;
set local role pgflight_owner;
drop function pgflight._store_tool_results(bigint, bigint, jsonb, timestamp with time zone);
commit;
