-- Revert pgflight:internals/_settle_model_call
begin;
set local role pgflight_owner;
drop function pgflight._settle_model_call(pgflight.agent_runs, integer, numeric, boolean, boolean, numeric, bigint[], timestamp with time zone);
commit;
