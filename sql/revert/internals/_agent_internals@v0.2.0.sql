-- Revert pgflight:internals/_agent_internals@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight._store_tool_results(bigint, bigint, jsonb, timestamptz);
drop function pgflight._price_usd(text, jsonb);
drop function pgflight._agent_fence(bigint, bigint, bigint, text);
commit;
