select * from pgflight.step_attempts where false;
