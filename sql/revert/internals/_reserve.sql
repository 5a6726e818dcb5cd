-- Revert pgflight:internals/_reserve
begin;
set local role pgflight_owner;
drop function pgflight._reserve(pgflight.agent_runs, bigint, integer, numeric, timestamp with time zone);
commit;
