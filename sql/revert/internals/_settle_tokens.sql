-- Revert pgflight:internals/_settle_tokens
begin;
set local role pgflight_owner;
drop function pgflight._settle_tokens(pgflight.agent_runs, bigint, bigint, boolean, timestamp with time zone);
commit;
