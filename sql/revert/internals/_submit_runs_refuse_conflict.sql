-- Revert pgflight:internals/_submit_runs_refuse_conflict
begin;
set local role pgflight_owner;
drop function pgflight._submit_runs_refuse_conflict(jsonb, bigint, integer[]);
commit;
