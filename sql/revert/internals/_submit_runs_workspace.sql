-- Revert pgflight:internals/_submit_runs_workspace
begin;
set local role pgflight_owner;
drop function pgflight._submit_runs_workspace(text);
commit;
