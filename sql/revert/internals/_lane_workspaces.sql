-- Revert pgflight:internals/_lane_workspaces
begin;
set local role pgflight_owner;
drop function pgflight._lane_workspaces(text);
commit;
