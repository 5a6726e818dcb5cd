-- Revert pgflight:views/flow_views
begin;
set local role pgflight_owner;
drop view pgflight.schedule_list;
drop view pgflight.workspace_flow;
commit;
