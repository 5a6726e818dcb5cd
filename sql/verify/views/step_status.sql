select * from pgflight.step_status where false;
select * from pgflight.engine_health;
