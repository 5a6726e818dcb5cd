-- Verify pgflight:views/flow_views
select workspace, max_in_flight, in_flight from pgflight.workspace_flow where false;
select workspace, name, next_fire_at from pgflight.schedule_list where false;
