-- Revert pgflight:internals/_submit_runs_require_depth
begin;
set local role pgflight_owner;
drop function pgflight._submit_runs_require_depth(jsonb, integer);
commit;
