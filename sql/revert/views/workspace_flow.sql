-- Revert pgflight:views/workspace_flow
begin;
set local role pgflight_owner;
drop view pgflight.workspace_flow;
commit;
