-- Verify pgflight:tables/step_attempts_retry_queue_event
select queue_delay_s from pgflight.step_attempts where false;
