-- Revert pgflight:internals/_token_estimate
begin;
set local role pgflight_owner;
drop function pgflight._token_estimate(pgflight.agent_runs, bigint);
commit;
