-- Verify pgflight:tables/schedules
select id, workspace_id, name, cron, time_zone, next_fire_at, pending_fire_at from pgflight.schedules where false;
select schedule_id, fire_at, outcome, run_id from pgflight.schedule_fires where false;
