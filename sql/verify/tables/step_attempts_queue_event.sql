-- Verify pgflight:tables/step_attempts_queue_event
select queue_event_id from pgflight.step_attempts where false;
