-- Revert pgflight:internals/_token_admission
begin;
set local role pgflight_owner;
drop function pgflight._token_admission(pgflight.agent_runs, bigint, timestamp with time zone);
commit;
